package shopper

import (
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Every way into a sale asks one rule first: staff's closure,
// event.Config.CheckOpen. A way in is a route that can give the caller a
// place (a sequence number in the sale's queue, a lane's or a safety-net
// room's) or an admission. There are two, both joins, and both are
// mounted behind open (Mount, MountBasic):
//
//   - POST /events/{id}/join: a plain join, a join with a lane invite, a
//     pass redemption (redeemPass) and a safety-net room's join
//     (joinRoom) are all this route;
//   - POST /e/{id}/basic/join: the basic page's join form.
//
// While the room is closed open answers them 503 closed with the
// closure's Retry-After (the basic page shows it as its closed page)
// before they name the caller, spend a limit or call Redis: nothing
// changes. The routes that answer a closed room otherwise ask the same
// function: the basic lobby shows the closure instead of the join form,
// the gate sends everyone to the waiting page (no safety-net entry), the
// status poll answers closed (admission.DecidePlace) and the turnstile
// mints no admission (turnstile.Admit). TestEveryWayInAsksOpen walks
// every route of the API in a closed room and fails if one of them
// creates a place or an admission.

// open lets a way in on only while staff have not closed the room.
func (s *API) open(c *fiber.Ctx) error {
	if err := kit.SaleOf(c).Config.CheckOpen(s.now()); err != nil {
		return err
	}
	return c.Next()
}
