package shopper

import (
	"github.com/anteroom/anteroom/retention"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

type claimJSON struct {
	ClaimID string       `json:"claim_id"`
	Status  claim.Status `json:"status"`
}

// claim turns an admission token into a claim for the caller it names. The
// answer is sent only after the order event is on JetStream.
func (s *API) claim(c *fiber.Ctx) error {
	cfg := &kit.SaleOf(c).Config
	res, err := s.spend(c, cfg, kit.Bearer(c), c.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderLocation, "/events/"+cfg.ID+"/claims/"+res.ClaimID)
	status := fiber.StatusCreated
	if res.Replay {
		status = fiber.StatusOK
	}
	return writeClaim(c.Status(status), res)
}

// spend turns admission token raw into a claim for the caller it names,
// in sale cfg, under idempotency key key ("" for the token's own, "jti:"
// and its id): Authorize, the edge's claim defences, the claim script,
// then Spent. The JSON claim and the basic page's claim form both spend
// here.
func (s *API) spend(c *fiber.Ctx, cfg *event.Config, raw, key string) (claim.Result, error) {
	// Who may claim: the turnstile's package comment. The token is bound
	// to its user: only that caller, named by the identity mode, may
	// spend it.
	adm, err := s.deps.Turnstile.Authorize(cfg, raw, func() (string, error) { return s.deps.Identity.User(c, false) }, s.now())
	if err != nil {
		return claim.Result{}, err
	}
	// An app-only sale's attestation (attest.go), before the door and
	// the signals count anything; an attested App Attest key is the
	// device signal of a sale that reads it from attestation.
	if err := s.attested(c, cfg); err != nil {
		return claim.Result{}, err
	}
	switch {
	case key == "":
		// A retry with the same token is the same request.
		key = "jti:" + adm.ID
	case !validIdemKey(key):
		return claim.Result{}, kit.BadRequest("Idempotency-Key must be 1 to 128 characters of A-Z a-z 0-9 . _ : -")
	}
	// The door (doorstep.go) before the claim script: a blocked or
	// ineligible caller is refused, a sunk one as an invalid token.
	if v, err := s.ask(c, cfg, adm.User, nil, s.now(), door.Claim); err != nil {
		return claim.Result{}, err
	} else if v.Action == door.Sink {
		return claim.Result{}, errSunkClaim
	}
	// The signals first: a forged or stale one is refused before it
	// spends any budget, and counts nothing.
	signals, err := s.deps.Guard.Signals(c, cfg, adm.User)
	if err != nil {
		return claim.Result{}, err
	}
	if err := s.deps.Guard.Claim(c, cfg, adm.User); err != nil { // rate limits
		return claim.Result{}, err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	res, err := s.deps.Claims.Claim(ctx, claim.Request{
		Event: cfg.ID, User: adm.User, Pos: adm.Pos, IdemKey: key,
		Limit: cfg.PerUserLimit, Buckets: cfg.Buckets,
		IdemTTL: claim.DefaultIdemTTL, ClaimTTL: time.Duration(cfg.ClaimTTLSeconds) * time.Second,
		Signals: signals, SignalsUntil: retention.Until(cfg.EndsAt, s.cfg.Retention),
	})
	if err != nil {
		return claim.Result{}, err
	}
	s.deps.Turnstile.Spent(adm, s.now()) // max_active counts the claim while pending
	return res, nil
}

// validIdemKey reports whether key is 1 to 128 characters of A-Z a-z 0-9
// . _ : - (the Idempotency-Key the claim accepts).
func validIdemKey(key string) bool {
	return len(key) >= 1 && len(key) <= 128 && plain(key)
}

// plainByte reports whether b is one of A-Z a-z 0-9 . _ : -, which JSON
// writes as is.
func plainByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '.' || b == '_' || b == ':' || b == '-'
}

// plain reports whether every byte of s is a plainByte.
func plain(s string) bool {
	for i := range len(s) {
		if !plainByte(s[i]) {
			return false
		}
	}
	return true
}

// writeClaim sends res as claimJSON. Claim ids and statuses are plain
// words, written without the reflecting JSON encoder (one claim's
// allocations and about a microsecond less); anything else goes through
// it.
func writeClaim(c *fiber.Ctx, res claim.Result) error {
	if !plain(res.ClaimID) || !plain(string(res.Status)) {
		return c.JSON(claimJSON{ClaimID: res.ClaimID, Status: res.Status})
	}
	var buf [128]byte
	b := append(buf[:0], `{"claim_id":"`...)
	b = append(b, res.ClaimID...)
	b = append(b, `","status":"`...)
	b = append(b, res.Status...)
	return kit.SendJSON(c, append(b, `"}`...))
}

type recordJSON struct {
	ClaimID   string       `json:"claim_id"`
	Event     string       `json:"event"`
	Status    claim.Status `json:"status"`
	Position  int64        `json:"position"`
	ClaimedAt time.Time    `json:"claimed_at"`
}

// lookupClaim shows a claim to its own user or an admin.
func (s *API) lookupClaim(c *fiber.Ctx) error {
	sale := kit.SaleOf(c)
	id := c.Params("claim_id")
	if _, err := claim.ParseClaimID(id); err != nil {
		return err
	}
	admin := s.deps.IsAdmin(c)
	user := ""
	if !admin {
		u, err := s.deps.Identity.User(c, false)
		if err != nil {
			return err
		}
		user = u
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	rec, err := s.deps.Store.Lookup(ctx, sale.Config.ID, id)
	if err != nil {
		return err
	}
	if !admin && rec.User != user {
		return claim.ErrNotFound // do not reveal other users' claims
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(recordJSON{ClaimID: id, Event: sale.Config.ID, Status: rec.Status, Position: rec.Pos, ClaimedAt: time.UnixMilli(rec.AtMs).UTC()})
}
