package pages

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

//go:embed assets/push-sw.js
var pushWorkerJS []byte

// pushWorker serves the waiting room's service worker, which shows the
// "your turn" notice a Web Push message brings while no page of the sale
// is in front (package push). It is served from /assets/ but allowed the
// scope /e/ (Service-Worker-Allowed), the waiting rooms' pages, so a
// click on the notice focuses or opens the room.
func (s *Pages) pushWorker(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "no-cache") // browsers check a worker for updates anyway
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set("Service-Worker-Allowed", "/e/")
	return c.Send(pushWorkerJS)
}
