package staffapi

import (
	"context"
	"strings"
	"time"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// rebuildTimeout bounds one rebuild: reading a sale's order events and
// rewriting its buckets.
const rebuildTimeout = 2 * time.Minute

// rebuildEvent recomputes the event's stock and claim state from the order
// stream after a Redis failover. Claims answer 503 paused while it runs;
// the event's paused flag is left as it was. It answers the rebuild's
// report.
func (s *API) rebuildEvent(c *fiber.Ctx) error {
	if s.deps.Rebuild == nil {
		return kit.RetryLater("degraded", "this node cannot rebuild events", 5)
	}
	id := strings.Clone(c.Params("id"))
	ctx, cancel := context.WithTimeout(c.UserContext(), rebuildTimeout)
	defer cancel()
	rep, err := s.deps.Rebuild(ctx, id)
	if err != nil {
		return err
	}
	s.record(c, "event.rebuild", id, nil, rep)
	if err := s.deps.Sales.Reload(ctx, id); err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(rep)
}
