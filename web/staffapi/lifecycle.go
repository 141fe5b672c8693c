package staffapi

import (
	"context"
	"encoding/json"

	"github.com/gofiber/fiber/v2"
)

// LifecycleLog is what the console's lifecycle list needs.
type LifecycleLog interface {
	Recent(ctx context.Context, ev string, n int) ([]json.RawMessage, error)
}

// lifecycleEvents answers GET /admin/events/{id}/lifecycle: the event's
// most recent lifecycle events, newest first, as they were published.
func (s *API) lifecycleEvents(c *fiber.Ctx) error {
	out := []json.RawMessage{}
	if s.deps.Lifecycle != nil {
		ctx, cancel := s.ctx(c)
		defer cancel()
		got, err := s.deps.Lifecycle.Recent(ctx, c.Params("id"), 50)
		if err != nil {
			return err
		}
		out = append(out, got...)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"events": out})
}
