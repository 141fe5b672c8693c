package shopper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/push"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// pushStore keeps Web Push subscriptions (*push.Service).
type pushStore interface {
	Save(ctx context.Context, ev string, shard int, seq int64, body []byte, until, now time.Time) error
	PublicKey() string
}

// pushKey answers GET /events/{id}/push: the node's VAPID public key, the
// page's applicationServerKey; 404 when Web Push is off.
func (s *API) pushKey(c *fiber.Ctx) error {
	if s.deps.Push == nil {
		return push.ErrDisabled
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.JSON(fiber.Map{"public_key": s.deps.Push.PublicKey()})
}

// pushSubscribe answers POST /events/{id}/push: the body is the browser's
// PushSubscription (with the notice's title and body), the ticket (cookie
// or bearer) names the place it is kept for, until an hour after the sale
// ends. The ticket goes through the status poll's defences (Guard.Poll):
// early birds, the per-address and per-ticket budgets. A ticket of
// another event, an oversized or malformed subscription: 400, nothing
// saved. 204 when kept.
func (s *API) pushSubscribe(c *fiber.Ctx) error {
	if s.deps.Push == nil {
		return push.ErrDisabled
	}
	sale := kit.SaleOf(c)
	cfg := &sale.Config
	now := s.clock.Request(c)
	t, err := s.deps.Guard.Poll(c, cfg, now)
	if errors.Is(err, tokens.ErrWrongEvent) {
		return fmt.Errorf("%w: %w", push.ErrWrongEvent, err)
	}
	if err != nil {
		return err
	}
	if t.Sunk {
		// The door's endless queue: answered as kept, never kept (its
		// turn never comes).
		return c.SendStatus(fiber.StatusNoContent)
	}
	shard := -1
	if cfg.JoinShards > 1 {
		if lane, _ := queue.Unlane(t.Seq); lane == 0 {
			shard = queue.ShardOf(t.User, cfg.JoinShards)
		}
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.deps.Push.Save(ctx, cfg.ID, shard, t.Seq, c.Body(), cfg.EndsAt.Add(time.Hour), now); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
