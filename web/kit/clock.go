package kit

import (
	"time"

	"github.com/gofiber/fiber/v2"
)

// Clock is the node's clock as the handlers read it.
type Clock struct {
	// Now is the node's clock: token lifetimes, sessions, proofs of work
	// and sale phases are decided by it.
	Now func() time.Time
	// NowAt is Now at the machine's instant t, or nil (see Request).
	NowAt func(t time.Time) time.Time
}

// Request is the node's time of request c: the instant fasthttp received
// it (read once per request, by fasthttp) on the node's clock, so that
// the middleware and handler of a status poll read no clock of their own.
// Without NowAt it is Now.
func (k Clock) Request(c *fiber.Ctx) time.Time {
	if k.NowAt == nil {
		return k.Now()
	}
	return k.NowAt(Received(c))
}

// Received is the machine's instant fasthttp received request c, or now
// for a request that fasthttp's server did not read (a RequestCtx driven
// in memory).
func Received(c *fiber.Ctx) time.Time {
	if t := c.Context().Time(); !t.IsZero() {
		return t
	}
	return time.Now()
}
