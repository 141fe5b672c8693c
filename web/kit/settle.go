package kit

import (
	"log/slog"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// Settle decides how request c is answered for err, for any handler that
// answers errors itself (the basic page's HTML, ErrorHandler's
// problem+json): the problem of ToProblem, with the request's path and id,
// kept in the request's Locals for the refusal count (ProblemLocal), the
// status, Retry-After and Cache-Control: no-store set on the response, and
// err logged when no row of the error table knows it. The caller writes
// the body.
func Settle(c *fiber.Ctx, err error, log *slog.Logger) *Problem {
	p, known := ToProblem(err)
	c.Locals(ProblemLocal, p)
	p.Instance = c.Path()
	p.RequestID = RequestID(c)
	if !known {
		log.Error("request failed", "request_id", p.RequestID, "method", c.Method(), "path", c.Path(), "err", err)
	}
	if p.RetryAfter > 0 {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(p.RetryAfter))
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Status(p.Status)
	return p
}
