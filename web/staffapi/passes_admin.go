package staffapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Staff's side of bypass passes (see shopper's passes.go for redemption):
// mint, list and revoke.

// PassStore keeps passes' uses, revocations and counters
// (*admission.Passes).
type PassStore interface {
	Mint(ctx context.Context, ev string, r admission.PassRecord) error
	Redeem(ctx context.Context, ev, id, user string) (int, error)
	Refused(ctx context.Context, ev, id string) error
	Revoke(ctx context.Context, ev, id, by string, at time.Time) (before, after admission.PassRecord, err error)
	List(ctx context.Context, ev string) ([]admission.PassRecord, error)
	Counts(ctx context.Context, ev string) (admission.PassCounts, error)
}

// Pass limits.
const (
	maxPassTTL  = 30 * 24 * time.Hour
	maxPassNote = 200
)

func (s *API) passesOrUnavailable() error {
	if s.deps.Passes == nil {
		return kit.RetryLater("degraded", "bypass passes are not kept on this node", 5)
	}
	return nil
}

type mintPassJSON struct {
	TTLSeconds int64  `json:"ttl_seconds"`
	Uses       *int   `json:"uses"`
	Note       string `json:"note"`
}

// mintPass answers POST /admin/events/{id}/passes {"ttl_seconds" (default
// 3600, at most 30 days), "uses" (default 1; 0 = unlimited until expiry),
// "note"} with 201 {"pass": the signed pass, shown only now, ...record}.
func (s *API) mintPass(c *fiber.Ctx) error {
	if err := s.passesOrUnavailable(); err != nil {
		return err
	}
	var in mintPassJSON
	if len(c.Body()) > 0 {
		if err := kit.DecodeStrict(c, "pass", &in); err != nil {
			return err
		}
	}
	uses := 1
	if in.Uses != nil {
		uses = *in.Uses
	}
	ttl := time.Duration(in.TTLSeconds) * time.Second
	if in.TTLSeconds == 0 {
		ttl = time.Hour
	}
	switch {
	case ttl < time.Second || ttl > maxPassTTL:
		return kit.BadRequest("ttl_seconds must be 1 to %d", int64(maxPassTTL/time.Second))
	case uses < 0 || uses > tokens.MaxPassUses:
		return kit.BadRequest("uses must be 0 (unlimited) to %d", tokens.MaxPassUses)
	case len(in.Note) > maxPassNote || !utf8.ValidString(in.Note) || strings.ContainsAny(in.Note, "\x00\r\n"):
		return kit.BadRequest("note must be at most %d bytes of one line of text", maxPassNote)
	}
	ev := c.Params("id")
	ctx, cancel := s.ctx(c)
	defer cancel()
	if _, err := s.deps.Configs.Get(ctx, ev); err != nil {
		return err
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return err
	}
	now := s.now()
	who, _ := kit.StaffOf(c)
	rec := admission.PassRecord{ID: hex.EncodeToString(raw[:]), ExpiresAt: now.Add(ttl).Truncate(time.Second).UTC(), Uses: uses,
		MintedBy: who.Name, MintedAt: now.Truncate(time.Second).UTC(), Note: in.Note}
	pass, err := s.deps.PassTokens.Sign(tokens.Pass{ID: rec.ID, Event: ev, ExpiresAt: rec.ExpiresAt, Uses: uses})
	if err != nil {
		return err
	}
	if err := s.deps.Passes.Mint(ctx, ev, rec); err != nil {
		return err
	}
	s.record(c, "pass.mint", ev, nil, rec)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"pass": pass, "record": rec, "header": tokens.PassHeader})
}

// listPasses answers GET /admin/events/{id}/passes: every pass of the
// event (never the pass itself) and the event's pass counters.
func (s *API) listPasses(c *fiber.Ctx) error {
	if err := s.passesOrUnavailable(); err != nil {
		return err
	}
	ev := c.Params("id")
	ctx, cancel := s.ctx(c)
	defer cancel()
	if _, err := s.deps.Configs.Get(ctx, ev); err != nil {
		return err
	}
	list, err := s.deps.Passes.List(ctx, ev)
	if err != nil {
		return err
	}
	counts, err := s.deps.Passes.Counts(ctx, ev)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"passes": list, "counts": counts})
}

// revokePass answers DELETE /admin/events/{id}/passes/{pass}: the pass is
// refused on every node from now on. Revoking twice answers the same.
func (s *API) revokePass(c *fiber.Ctx) error {
	if err := s.passesOrUnavailable(); err != nil {
		return err
	}
	ev, id := c.Params("id"), c.Params("pass")
	if !tokens.ValidPassID(id) {
		return admission.ErrPassUnknown
	}
	who, _ := kit.StaffOf(c)
	ctx, cancel := s.ctx(c)
	defer cancel()
	before, after, err := s.deps.Passes.Revoke(ctx, ev, id, who.Name, s.now())
	if err != nil {
		return err
	}
	if before.RevokedAt == nil {
		s.record(c, "pass.revoke", ev, before, after)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(after)
}
