package shopper

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

type joinJSON struct {
	Ticket      string          `json:"ticket"`
	Seq         int64           `json:"seq"`
	Position    *int64          `json:"position"`
	State       admission.State `json:"state"`
	PollAfterMs int64           `json:"poll_after_ms"`
	// Lane names the caller's lane; absent for the default lane.
	Lane string `json:"lane,omitempty"`
}

// join gives the caller a queue ticket: one script call, in a round trip
// shared with the joins that arrive meanwhile (queue.Joiner).
func (s *API) join(c *fiber.Ctx) error {
	sale := kit.SaleOf(c)
	cfg := &sale.Config
	now := s.now() // a closed room never gets here (open, door.go)
	user, claims, err := s.joiner(c, cfg)
	if err != nil {
		return err
	}
	if err := s.attested(c, cfg); err != nil { // an app-only sale (attest.go): before anything is counted
		return err
	}
	if raw := c.Get(tokens.PassHeader); raw != "" { // staff and testing: no queue, no ticket
		return s.redeemPass(c, sale, user, claims, raw)
	}
	v, err := s.ask(c, cfg, user, claims, now, joinStep(cfg)) // who may come in (doorstep.go)
	if err != nil {
		return err
	}
	if err := s.deps.Guard.Join(c, challenged(cfg, v), user); err != nil { // invite, proof of work, rate limits
		if v, err = s.overBudget(c, cfg, user, claims, now, joinStep(cfg), err); err != nil { // a busy network (busynet.go)
			return err
		}
	}
	switch v.Action {
	case door.Sink:
		// Named as a real join names it: an invite's lane.
		lane, err := s.laneOf(c, cfg, user, claims, now)
		if err != nil {
			return err
		}
		return s.sinkJoin(c, sale, user, lane, now)
	case door.Bypass:
		return s.bypassJoin(c, cfg, user, now)
	}
	if cfg.IsSafetyNet() {
		return s.joinRoom(c, sale, user, v)
	}
	entry, lane, ticket, err := s.enqueue(c, sale, user, claims, now, v)
	if err != nil {
		return err
	}
	d := admission.DecidePlace(sale, queue.Place{Shard: entry.Shard, Seq: entry.Seq, Joined: entry.JoinedAt}, now, rand.Float64)
	return s.joinAnswer(c, cfg, ticket, entry.Seq, lane, d)
}

// joinAnswer answers a join to a sale (not a room) with ticket, number
// seq in lane and decision d: the one shape of a real and a sunk join.
func (s *API) joinAnswer(c *fiber.Ctx, cfg *event.Config, ticket string, seq int64, lane int, d admission.Decision) error {
	if cfg.IsSafetyNet() {
		return roomWaiting(c, ticket, seq, d)
	}
	out := joinJSON{Ticket: ticket, Seq: seq, State: d.State, PollAfterMs: pollMillis(d.PollAfter)}
	if lane > 0 {
		out.Lane = cfg.Lanes[lane-1].Name
	}
	if d.Position > 0 {
		p := d.Position
		out.Position = &p
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	var buf [512]byte
	return kit.SendJSON(c, appendJoin(buf[:0], &out))
}

// enqueue puts user in sale's queue, in their lane (laneOf: an invite or
// the claims of their user token), and gives them the ticket cookie: join's
// step after its defences, shared with the basic page's join form. It
// returns the entry, the lane and the signed ticket.
//
// The door's verdict v names the lists the join script decides exactly
// (door.Verdict.Exact): their copies in the join's slot ride its one
// script call, which refuses a listed user (403 blocked or not_eligible)
// with nothing written.
func (s *API) enqueue(c *fiber.Ctx, sale *admission.Sale, user string, claims map[string][]string, now time.Time, v door.Verdict) (queue.Entry, int, string, error) {
	cfg := &sale.Config
	lane, err := s.laneOf(c, cfg, user, claims, now)
	if err != nil {
		return queue.Entry{}, 0, "", err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	times := sale.JoinTimes(lane)
	times.Lists = s.exactLists(cfg, user, times, v)
	start := time.Now()
	entry, err := s.deps.Joiner.Join(ctx, cfg.ID, user, times) // refused from a view older than event.MaxViewAge
	s.pace.observe(time.Since(start))
	if err != nil {
		return queue.Entry{}, 0, "", doorErr(cfg, err)
	}
	ticket, err := s.giveTicket(c, cfg, user, entry.Seq, entry.JoinedAt)
	if err != nil {
		return queue.Entry{}, 0, "", err
	}
	return entry, lane, ticket, nil
}

// errRoomTurnEnded answers a status poll in a safety-net room whose
// admission has ended.
var errRoomTurnEnded = kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "your admission to this room has ended; join again")

// cacheControlKey and noStore are the Cache-Control header of a waiting
// user's status answer, fiber.HeaderCacheControl in fasthttp's canonical
// form.
var cacheControlKey, noStore = []byte("Cache-Control"), []byte("no-store")

type statusJSON struct {
	State       admission.State `json:"state"`
	Position    *int64          `json:"position"`
	Ahead       int64           `json:"ahead"`
	ETASeconds  int64           `json:"eta_seconds"`
	PollAfterMs int64           `json:"poll_after_ms"`
	// ClosedBy is "staff" when state is closed because staff closed the
	// room (event.Closure: the place is kept, keep polling), absent when
	// the sale has ended.
	ClosedBy       string     `json:"closed_by,omitempty"`
	AdmissionToken string     `json:"admission_token,omitempty"`
	ExpiresAt      *time.Time `json:"admission_expires_at,omitempty"`
}

// status answers from the ticket and the node's view: zero Redis round
// trips while waiting; one to count an admission under max_active.
func (s *API) status(c *fiber.Ctx) error {
	sale := kit.SaleOf(c)
	cfg := &sale.Config
	now := s.clock.Request(c)
	t, err := s.deps.Guard.Poll(c, cfg, now) // early birds, the status limits, then the ticket
	if err != nil {
		return err
	}
	d, tok, a, err := s.decide(c, sale, t, now)
	if err != nil {
		return err
	}
	if d.State == admission.Admitted {
		adm := statusOf(d) // escapes to the JSON encoder; the waiting answer's does not
		adm.AdmissionToken = tok
		if d.Position > 0 {
			p := d.Position
			adm.Position = &p
		}
		exp := a.ExpiresAt.UTC()
		adm.ExpiresAt = &exp
		setAdmissionCookie(c, cfg.ID, tok, exp)
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(adm)
	}
	// The hot path — millions of waiting polls — is encoded by hand: same
	// JSON, a fraction of the cost of reflection; its header is set by
	// its canonical name (no copy and normalization of the name).
	c.Response().Header.SetCanonical(cacheControlKey, noStore)
	out := statusOf(d)
	if d.Position > 0 {
		p := d.Position // on the stack: out never reaches an interface
		out.Position = &p
	}
	var buf [128]byte
	return kit.SendJSON(c, appendStatus(buf[:0], &out))
}

// decide is a status poll's decision for the holder of ticket t in sale
// at now, from the node's view alone (no Redis): admission.DecidePlace,
// then the safety-net room's and max_active's late-show rules. An
// admitted decision comes with its admission, minted by the turnstile
// (Kind Queue): the token and its claims. The JSON status and the basic
// page both decide here.
func (s *API) decide(c *fiber.Ctx, sale *admission.Sale, t tokens.Ticket, now time.Time) (admission.Decision, string, tokens.Admission, error) {
	cfg := &sale.Config
	if t.Sunk || s.deps.Door.Applies(cfg) { // a sale without a door: one branch
		if d, sunk, err := s.sunkStatus(c, sale, t, now); err != nil || sunk {
			return d, "", tokens.Admission{}, err // never an admission
		}
	}
	d := admission.DecidePlace(sale, queue.Place{Shard: queue.ShardOf(t.User, cfg.JoinShards), Seq: t.Seq, Joined: t.IssuedAt}, now, rand.Float64)
	if d.State == admission.Admitted && cfg.IsSafetyNet() && d.Position <= sale.Stale {
		// In a safety-net room an admission ends: leaving ends the turn.
		return d, "", tokens.Admission{}, errRoomTurnEnded
	}
	if d.State == admission.Admitted && cfg.MaxActive > 0 && d.Lane == 0 && s.deps.Sales.Held(cfg.ID, d.Position) {
		// A late no-show: a token now would put one more person in
		// checkout than max_active. In a room the turn has ended; in a
		// sale they wait until the frontier lets them in. While the node
		// still reads the held log it cannot tell: ask again shortly.
		switch {
		case sale.HeldBehind:
		case cfg.IsSafetyNet():
			return d, "", tokens.Admission{}, errRoomTurnEnded
		default:
			s.deps.Sales.LateShow(cfg.ID, d.Position)
		}
		d.State, d.Ahead, d.ETA, d.PollAfter = admission.Waiting, 0, 0, admission.MinPoll
	}
	if d.State != admission.Admitted {
		s.deps.Sales.ShownETA(sale, t.User, now, d)
		return d, "", tokens.Admission{}, nil
	}
	pos := queue.Laned(d.Lane, d.Position) // the position itself in the default lane
	// Under max_active the admission is counted in Redis before the token
	// goes out (turnstile.Admit): the one Redis call a status poll can
	// make, once per token.
	ctx, cancel := s.ctx(c)
	defer cancel()
	tok, a, err := s.deps.Turnstile.Admit(ctx, cfg, turnstile.Entry{Kind: turnstile.Queue, User: t.User, Pos: pos, Waited: now.Sub(t.IssuedAt)}, now)
	if err != nil {
		return d, "", tokens.Admission{}, err
	}
	s.deps.Sales.ShownETA(sale, t.User, now, d)
	return d, tok, a, nil
}

// statusOf is the answer of decision d, without a position.
func statusOf(d admission.Decision) statusJSON {
	s := statusJSON{State: d.State, Ahead: d.Ahead, ETASeconds: int64(d.ETA.Round(time.Second) / time.Second), PollAfterMs: pollMillis(d.PollAfter)}
	if d.ByStaff {
		s.ClosedBy = "staff"
	}
	return s
}

// giveTicket signs user's queue ticket for number seq of event cfg, joined
// at joined, and sets it as the ticket cookie (HttpOnly, until an hour
// after the sale ends).
func (s *API) giveTicket(c *fiber.Ctx, cfg *event.Config, user string, seq int64, joined time.Time) (string, error) {
	return s.signTicket(c, cfg, tokens.Ticket{Event: cfg.ID, User: user, Seq: seq, IssuedAt: joined})
}

// signTicket signs t and sets it as the ticket cookie (giveTicket; a
// sunk ticket the same way).
func (s *API) signTicket(c *fiber.Ctx, cfg *event.Config, t tokens.Ticket) (string, error) {
	ticket, err := s.deps.Tickets.Sign(t)
	if err != nil {
		return "", err
	}
	kit.SetCookie(c, &fiber.Cookie{ // Lax, or None when the room is embedded by another site
		Name: kit.TicketCookie(cfg.ID), Value: ticket, Path: "/", HTTPOnly: true, Expires: cfg.EndsAt.Add(time.Hour),
	})
	return ticket, nil
}

// appendJoin encodes a join answer: the same JSON as encoding/json writes
// for joinJSON. The ticket is base64url and dots, and State one of
// admission's fixed identifiers, so neither needs escaping.
func appendJoin(b []byte, j *joinJSON) []byte {
	b = append(b, `{"ticket":"`...)
	b = append(b, j.Ticket...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, j.Seq, 10)
	b = append(b, `,"position":`...)
	if j.Position != nil {
		b = strconv.AppendInt(b, *j.Position, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"state":"`...)
	b = append(b, j.State...)
	b = append(b, `","poll_after_ms":`...)
	b = strconv.AppendInt(b, j.PollAfterMs, 10)
	if j.Lane != "" { // a lane name needs no escaping (event.Lane)
		b = append(b, `,"lane":"`...)
		b = append(b, j.Lane...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// appendStatus encodes a status answer without an admission token; State
// is one of admission's fixed identifiers, so it needs no escaping.
func appendStatus(b []byte, s *statusJSON) []byte {
	b = append(b, `{"state":"`...)
	b = append(b, s.State...)
	b = append(b, `","position":`...)
	if s.Position != nil {
		b = strconv.AppendInt(b, *s.Position, 10)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"ahead":`...)
	b = strconv.AppendInt(b, s.Ahead, 10)
	b = append(b, `,"eta_seconds":`...)
	b = strconv.AppendInt(b, s.ETASeconds, 10)
	b = append(b, `,"poll_after_ms":`...)
	b = strconv.AppendInt(b, s.PollAfterMs, 10)
	if s.ClosedBy != "" {
		b = append(b, `,"closed_by":"`...)
		b = append(b, s.ClosedBy...) // "staff": nothing to escape
		b = append(b, '"')
	}
	return append(b, '}')
}
