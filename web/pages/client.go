package pages

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

// clientJS is the client library for shops' apps and pages: an ES module
// without dependencies (join, polling, backoff, idempotent claims).
//
//go:embed assets/anteroom.js
var clientJS []byte

// clientScript serves /assets/anteroom.js.
func (s *Pages) clientScript(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Send(clientJS)
}
