package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/anteroom/anteroom/internal/clock"
	"github.com/redis/go-redis/v9"
)

// syncClock measures the node's offset to Redis TIME before the node
// serves, so its first admission token already carries Redis time; every
// frontier step measures it again (sale.Snapshots.UseClock). A clock
// more than a second off is logged: the node keeps Redis time, but the
// machine's clock needs fixing (NTP).
func syncClock(ctx context.Context, rdb redis.UniversalClient, clk *clock.Clock, log *slog.Logger) {
	for range 3 {
		sent := clk.Local()
		t, err := rdb.Time(ctx).Result()
		if err == nil && clk.Observe(sent, clk.Local(), t) {
			break
		}
	}
	off, ok := clk.Offset()
	switch {
	case !ok:
		log.Warn("clock: no offset to Redis TIME measured yet; the machine's clock is used until a frontier step measures it")
	case off.Abs() > time.Second:
		log.Warn("clock: this node's clock is off Redis TIME; the node keeps Redis time", "offset", off.Round(time.Millisecond).String(), "clock_skew", clk.Skew().String())
	}
}
