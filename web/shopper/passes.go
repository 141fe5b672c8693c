package shopper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Bypass passes (see admission.Passes and tokens.Passes): an operator mints
// (web/passes_admin.go)
// one for one event, for a time and a number of uses; whoever presents it
// on join in the X-Bypass-Pass header is answered with an admission token
// at once, without a queue ticket. It buys admission and nothing more: the
// claim still holds the per-user limit and the stock. Mint and revoke are
// recorded in the audit trail (never the pass itself, which is shown once,
// at mint).

// passRedeemer spends passes' uses and counts refusals
// (*admission.Passes).
type passRedeemer interface {
	Redeem(ctx context.Context, ev, id, user string) (int, error)
	Refused(ctx context.Context, ev, id string) error
}

// passVerifier checks a pass's signature, event and expiry
// (*tokens.Passes).
type passVerifier interface {
	Verify(tok, ev string, now time.Time) (ps tokens.Pass, expired bool, err error)
}

var errNoPasses = kit.RetryLater("degraded", "bypass passes are not kept on this node", 5)

// passJoinJSON answers a join that redeemed a pass.
type passJoinJSON struct {
	State          admission.State `json:"state"`
	Position       *int64          `json:"position"`
	AdmissionToken string          `json:"admission_token"`
	ExpiresAt      time.Time       `json:"admission_expires_at"`
	Pass           string          `json:"pass"`
	Used           int             `json:"pass_used"`
	Uses           int             `json:"pass_uses"`
}

// redeemPass answers a join that carries a pass: an admission token for
// user at once, or 403 pass_invalid / pass_revoked / pass_used_up with
// nothing changed but the refusal counter.
//
// The door judges a redemption as the claim it buys (door.Claim): a
// blocked or ineligible caller is refused before a use is spent, and a
// sunk one is answered pass_invalid. A pass is staff's own way past the
// queue, so the door's rules that send a join to a challenge or a bypass
// do not apply to it.
func (s *API) redeemPass(c *fiber.Ctx, sale *admission.Sale, user string, claims map[string][]string, raw string) error {
	if s.deps.Passes == nil {
		return errNoPasses
	}
	cfg := &sale.Config
	now := s.now()
	if v, err := s.ask(c, cfg, user, claims, now, door.Claim); err != nil {
		return err
	} else if v.Action == door.Sink {
		return fmt.Errorf("door: %w", tokens.ErrPassInvalid)
	}
	ps, expired, err := s.deps.PassTokens.Verify(raw, cfg.ID, now)
	ctx, cancel := s.ctx(c)
	defer cancel()
	if expired {
		if err := s.deps.Passes.Refused(ctx, cfg.ID, ps.ID); err != nil {
			s.cfg.Log.Warn("pass refusal not counted", "request_id", kit.RequestID(c), "err", err)
		}
	}
	if err != nil {
		return err // tokens.ErrPassInvalid: 403 pass_invalid
	}
	if !now.Before(cfg.EndsAt) {
		return kit.NewProblem(fiber.StatusForbidden, "not_open", "the sale has ended")
	}
	used, err := s.deps.Passes.Redeem(ctx, cfg.ID, ps.ID, user)
	if errors.Is(err, admission.ErrPassUnknown) {
		// On redemption an unknown pass is one this sale never minted:
		// as invalid as a forged one, not a missing resource.
		return fmt.Errorf("pass %s: %w", ps.ID, tokens.ErrPassInvalid)
	}
	if err != nil {
		return err // errorRows: revoked, used up, or a backing service
	}
	tok, a, err := s.deps.Turnstile.Admit(c.UserContext(), cfg, turnstile.Entry{Kind: turnstile.Pass, User: user}, now)
	if err != nil {
		return err
	}
	exp := a.ExpiresAt.UTC()
	setAdmissionCookie(c, cfg.ID, tok, exp)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(passJoinJSON{State: admission.Admitted, AdmissionToken: tok, ExpiresAt: exp, Pass: ps.ID, Used: used, Uses: ps.Uses})
}
