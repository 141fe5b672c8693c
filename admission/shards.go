package admission

import (
	"context"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// ReadOrder reads every join shard of the sale c (JoinShards > 1) and
// returns the view after prev; prev may be nil, or from a layout the
// config no longer has, and is then started afresh. One small script per
// shard and tick, each on its shard's slot; status reads the result only.
func (f *Frontier) ReadOrder(ctx context.Context, ev string, c *event.Config, prev *queue.Order) (*queue.Order, error) {
	if prev == nil || !prev.Fits(c.JoinShards, c.PrequeueOpensAt) {
		prev = queue.NewOrder(c.JoinShards, c.PrequeueOpensAt)
	}
	reads := make([]queue.ShardRead, c.JoinShards)
	for s := range reads {
		r, err := f.shards.ReadShard(ctx, ev, s, c.WindowEnd(), prev.ReadFrom(s))
		if err != nil {
			return nil, err
		}
		reads[s] = r
	}
	return prev.Next(reads), nil
}
