package lifecycle

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/admission"
)

//go:embed queueing.lua
var queueingLua string

// QueueingQuiet is how long nobody must have been seen waiting in a
// safety-net room before it counts as no longer queueing (the
// queueing_stopped event): a room at its threshold, queueing one visitor
// for a tick now and then, does not flap.
const QueueingQuiet = 3 * time.Second

// observeQueueing records a safety-net room's queueing_started and
// queueing_stopped transitions (queueing.lua) and returns the outbox length.
func (r *Recorder) observeQueueing(ctx context.Context, sale *admission.Sale) (int64, error) {
	cfg := &sale.Config
	waiting := max(sale.Joined-int64(sale.Frontier), 0)
	n, err := r.queueing.Run(ctx, r.rdb, []string{stateKey(cfg.ID), outboxKey(cfg.ID), recentKey(cfg.ID)},
		cfg.ID, waiting, sale.Active, sale.ServerTime.UnixMilli(), QueueingQuiet.Milliseconds()).Int64()
	if err != nil {
		return 0, fmt.Errorf("lifecycle %s: queueing: %w", cfg.ID, err)
	}
	return n, nil
}
