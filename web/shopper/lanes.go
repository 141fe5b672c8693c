package shopper

import (
	"slices"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// laneClaims names the caller and reads claims of their verified user
// token in one verification (UserTokenIdentity in the jwt identity mode).
type laneClaims interface {
	UserClaims(c *fiber.Ctx, names []string) (string, map[string][]string, error)
}

// joiner names the caller of a join to event cfg (see Identity.User) and,
// when cfg has lanes chosen by a claim of the user token and the identity
// reads claims, returns those claims' values from the same verification.
func (s *API) joiner(c *fiber.Ctx, cfg *event.Config) (string, map[string][]string, error) {
	var names []string
	for i := range cfg.Lanes {
		if l := &cfg.Lanes[i]; l.Claim != nil && !slices.Contains(names, l.Claim.Name) {
			names = append(names, l.Claim.Name)
		}
	}
	if lc, ok := s.deps.Identity.(laneClaims); ok && len(names) > 0 {
		return lc.UserClaims(c, names)
	}
	user, err := s.deps.Identity.User(c, true)
	return user, nil, err
}

// laneOf decides the lane (event.Lane) a joiner of an event with lanes
// joins: the lane of a signed invite for this event and user (a forged,
// foreign or expired invite, or one for a lane the event lacks, is 403
// invite_invalid and nothing changes), else the first lane whose claim
// the caller's verified user token carries (claims, from joiner), else the
// default lane (0). An event without lanes ignores both, as it always did.
func (s *API) laneOf(c *fiber.Ctx, cfg *event.Config, user string, claims map[string][]string, now time.Time) (int, error) {
	if len(cfg.Lanes) == 0 {
		return 0, nil
	}
	if raw := c.Get(tokens.InviteHeader); raw != "" {
		name, err := s.deps.Invites.VerifyLane(raw, cfg.ID, user, now)
		if err != nil {
			return 0, err // kit.ToProblem: 403 invite_invalid
		}
		if name != "" {
			i, _, ok := cfg.Lane(name)
			if !ok {
				return 0, kit.NewProblem(fiber.StatusForbidden, "invite_invalid", "this invite names a lane this sale does not have")
			}
			return i + 1, nil
		}
	}
	for i := range cfg.Lanes {
		if l := &cfg.Lanes[i]; l.Claim != nil && slices.Contains(claims[l.Claim.Name], l.Claim.Value) {
			return i + 1, nil
		}
	}
	return 0, nil
}
