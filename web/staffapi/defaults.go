package staffapi

import (
	"github.com/gofiber/fiber/v2"

	"github.com/anteroom/anteroom/event"
)

// eventDefaults answers GET /admin/defaults (viewer role): every event
// field's default, event.DefaultConfig as JSON, so the console fills a new
// sale's form from what the server would store instead of keeping a copy.
// It reads nothing: the defaults are the code's.
func (s *API) eventDefaults(c *fiber.Ctx) error {
	return c.JSON(event.DefaultConfig())
}
