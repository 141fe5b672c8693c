package shopper

import (
	"errors"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/gofiber/fiber/v2"
)

// A busy network: behind a carrier-grade NAT many people share one
// address. A join that only its per-IP budget refused (limits.join.ip;
// the Guard's refusal says so, protect.BusyNetwork) is asked of the door
// again as a busy network (door.Request.Busy, the rule function
// busy_network()) when a rule of the sale may challenge one
// (door.BusyChallenges). A Challenge then runs Guard.JoinBusy — the
// challenge, spent once, and a per-IP ceiling of its own with the event
// and global budgets — and the join goes on with that verdict; any other
// verdict leaves the 429. A join the Guard let through pays nothing for
// this, and a refused one nothing in Redis before JoinBusy.

// busyRefusal is a Guard's refusal of a join over its per-IP budget
// alone (*protect.BusyNetwork).
type busyRefusal interface{ BusyNetwork() bool }

// overBudget is a join's way on after the Guard refused it with err: the
// verdict to go on with, or the error to answer (err itself unless a door
// rule escalates a busy network to a challenge the caller passes).
func (s *API) overBudget(c *fiber.Ctx, cfg *event.Config, user string, claims map[string][]string, now time.Time, step door.Step, err error) (door.Verdict, error) {
	var busy busyRefusal
	if !errors.As(err, &busy) || !busy.BusyNetwork() || !s.deps.Door.Applies(cfg) || !door.BusyChallenges(cfg) {
		return door.Verdict{}, err
	}
	r := s.request(c, cfg, user, claims, now)
	r.Busy = true
	v := s.deps.Door.Check(cfg, r, step)
	if v.Action != door.Challenge {
		return door.Verdict{}, err // the 429 stands
	}
	if err := s.deps.Guard.JoinBusy(c, cfg, user); err != nil {
		return door.Verdict{}, err
	}
	return v, nil
}
