package admission

import (
	"context"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// ReadOrder reads every join shard of the sale c (JoinShards > 1), a view
// that acts until Redis TIME until (a shard refuses to freeze its window
// from it after that: ConfigAt + event.MaxViewAge), and returns the view
// after prev; prev may be nil, or from a layout the
// config no longer has, and is then started afresh. One small script per
// shard and tick, each on its shard's slot, all in one pipeline; status
// reads the result only.
func (f *Frontier) ReadOrder(ctx context.Context, ev string, c *event.Config, until time.Time, prev *queue.Order) (*queue.Order, error) {
	if prev == nil || !prev.Fits(c.JoinShards, c.PrequeueOpensAt) {
		prev = queue.NewOrder(c.JoinShards, c.PrequeueOpensAt)
	}
	from := make([]int, c.JoinShards)
	for s := range from {
		from[s] = prev.ReadFrom(s)
	}
	reads, err := f.shards.ReadShards(ctx, ev, c.WindowEnd(), until, from)
	if err != nil {
		return nil, err
	}
	return prev.Next(reads), nil
}
