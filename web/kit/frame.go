package kit

import (
	"strings"

	"github.com/anteroom/anteroom/event"
	"github.com/gofiber/fiber/v2"
)

// FrameAncestors is the CSP frame-ancestors source list of the waiting
// room of sale cfg (nil: not in the node's view): 'none' by default, or
// the origins staff allowed to embed it (event.Config.FrameAncestors,
// validated there: each is one origin, so none can add a directive).
// Every page that renders the room (pages, with or without JavaScript)
// puts it in its Content-Security-Policy and calls SetFrameOptions.
func FrameAncestors(cfg *event.Config) string {
	if cfg == nil || len(cfg.FrameAncestors) == 0 {
		return "'none'"
	}
	return strings.Join(cfg.FrameAncestors, " ")
}

// SetFrameOptions sets X-Frame-Options: DENY when ancestors (from
// FrameAncestors) lets nobody frame the page, for browsers without CSP;
// with a list it sets nothing: X-Frame-Options cannot name several
// origins, and a browser that knows CSP ignores it when frame-ancestors
// is present.
func SetFrameOptions(c *fiber.Ctx, ancestors string) {
	if ancestors == "'none'" {
		c.Set(fiber.HeaderXFrameOptions, "DENY")
	}
}
