package web

import (
	_ "embed"

	"github.com/anteroom/anteroom/event"
	"github.com/gofiber/fiber/v2"
)

//go:embed assets/room.html
var roomHTML []byte

// page serves the waiting room; the page reads everything else from the
// JSON API.
func (s *Server) page(c *fiber.Ctx) error {
	if !event.ValidID(c.Params("id")) {
		return errUnknownEvent
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "public, max-age=60")
	c.Set("Content-Security-Policy", "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
	c.Set("X-Content-Type-Options", "nosniff")
	return c.Send(roomHTML)
}
