package limit

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed heartbeat.lua
var heartbeatLua string

// nodesKey is the heartbeat set of every node of the deployment.
const nodesKey = "ar:{rl:nodes}"

// Heartbeat keeps this node in the deployment's node set and the Limiter's
// count of healthy nodes up to date; degraded nodes split shared budgets by
// that count. It is a loop owned by the node: Run until ctx is done.
type Heartbeat struct {
	l      *Limiter
	id     string
	every  time.Duration
	script *redis.Script
}

// NewHeartbeat returns the heartbeat of node id (unique per process) for
// l, beating every interval; a node unseen for three intervals is gone.
//
// Default: every second when every <= 0.
func (l *Limiter) NewHeartbeat(id string, every time.Duration) *Heartbeat {
	if every <= 0 {
		every = time.Second
	}
	return &Heartbeat{l: l, id: id, every: every, script: redis.NewScript(heartbeatLua)}
}

// Beat records the node once and updates the count. Its outcome also tells
// the Limiter's health: a failed beat degrades, good beats help recovery,
// so a node notices an outage and its end even without traffic. While
// Redis is down the last count stays in force.
func (hb *Heartbeat) Beat(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, hb.l.cfg.Timeout)
	defer cancel()
	start := time.Now()
	n, err := hb.script.Run(cctx, hb.l.rdb, []string{nodesKey}, hb.id, (3 * hb.every).Milliseconds()).Int64()
	if ctx.Err() == nil {
		hb.l.h.observe(err, time.Since(start))
	}
	if err != nil {
		return fmt.Errorf("limit heartbeat: %w", err)
	}
	hb.l.h.nodes.Store(n)
	return nil
}

// Run beats every interval until ctx is done, reporting failures to onErr
// (which may be nil), then leaves the set so the others resize at once.
func (hb *Heartbeat) Run(ctx context.Context, onErr func(error)) {
	t := time.NewTicker(hb.every)
	defer t.Stop()
	for {
		if err := hb.Beat(ctx); err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hb.l.cfg.Timeout)
			pipe := hb.l.rdb.Pipeline()
			pipe.ZRem(lctx, nodesKey, hb.id)
			_, _ = pipe.Exec(lctx)
			cancel()
			return
		case <-t.C:
		}
	}
}
