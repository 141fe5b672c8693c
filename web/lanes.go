package web

import (
	"slices"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
	"github.com/gofiber/fiber/v2"
)

// laneClaims reads a claim of the caller's verified user token
// (UserTokenIdentity in the jwt identity mode).
type laneClaims interface {
	ClaimValues(c *fiber.Ctx, name string) []string
}

// laneOf decides the lane (event.Lane) a joiner of an event with lanes
// joins: the lane of a signed invite for this event and user (a forged,
// foreign or expired invite, or one for a lane the event lacks, is 403
// invite_invalid and nothing changes), else the first lane whose claim
// the caller's verified user token carries, else the default lane (0). An
// event without lanes ignores both, as it always did.
func (s *Server) laneOf(c *fiber.Ctx, cfg *event.Config, user string, now time.Time) (int, error) {
	if len(cfg.Lanes) == 0 {
		return 0, nil
	}
	if raw := c.Get(tokens.InviteHeader); raw != "" {
		name, err := s.edge.invites.VerifyLane(raw, cfg.ID, user, now)
		if err != nil {
			return 0, problem(fiber.StatusForbidden, "invite_invalid", "this invite is not for this sale and account, or has expired")
		}
		if name != "" {
			i, _, ok := cfg.Lane(name)
			if !ok {
				return 0, problem(fiber.StatusForbidden, "invite_invalid", "this invite names a lane this sale does not have")
			}
			return i + 1, nil
		}
	}
	lc, ok := s.deps.Identity.(laneClaims)
	if !ok {
		return 0, nil
	}
	for i := range cfg.Lanes {
		if l := &cfg.Lanes[i]; l.Claim != nil && slices.Contains(lc.ClaimValues(c, l.Claim.Name), l.Claim.Value) {
			return i + 1, nil
		}
	}
	return 0, nil
}
