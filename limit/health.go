package limit

import (
	"context"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

// health tracks whether Redis answers well enough to keep the buckets. It
// moves between two states:
//
//   - healthy: every decision goes to Redis. A failed call, or SlowCalls
//     calls in a row slower than SlowAfter, switch to degraded.
//   - degraded: decisions are node-local; a ProbeFraction of them (at
//     most one at a time, so few requests ever wait on a sick Redis) and
//     every heartbeat also try Redis. RecoverAfter good calls in a row
//     switch back.
//
// "In a row" is counted across goroutines: any good call resets the count
// of slow ones and any bad call the count of good ones.
type health struct {
	cfg *Config

	degraded atomic.Bool
	probing  atomic.Bool // a probe is in flight
	slowRun  atomic.Int64
	goodRun  atomic.Int64

	redisDecisions, localDecisions, allowed, denied atomic.Uint64
	errors, slow, probes, degradations, recoveries  atomic.Uint64
	nodes                                           atomic.Int64
	// split is the most nodes the last beats saw (see Heartbeat.Beat):
	// what a degraded node splits shared budgets by.
	split atomic.Int64
}

// useRedis reports whether a decision should go to Redis, and whether that
// call is a probe made while degraded; a probe must be ended with
// endProbe.
func (h *health) useRedis() (use, probe bool) {
	if !h.degraded.Load() {
		return true, false
	}
	if rand.Float64() < h.cfg.ProbeFraction && h.probing.CompareAndSwap(false, true) {
		h.probes.Add(1)
		return true, true
	}
	return false, false
}

func (h *health) endProbe() { h.probing.Store(false) }

// observe records the outcome of one Redis call that took d.
func (h *health) observe(err error, d time.Duration) {
	switch {
	case err != nil:
		h.errors.Add(1)
		h.goodRun.Store(0)
		h.degrade()
	case d > h.cfg.SlowAfter:
		h.slow.Add(1)
		h.goodRun.Store(0)
		if h.slowRun.Add(1) >= int64(h.cfg.SlowCalls) {
			h.degrade()
		}
	default:
		h.slowRun.Store(0)
		if h.degraded.Load() && h.goodRun.Add(1) >= int64(h.cfg.RecoverAfter) {
			h.recover()
		}
	}
}

func (h *health) degrade() {
	h.slowRun.Store(0)
	if h.degraded.CompareAndSwap(false, true) {
		h.degradations.Add(1)
	}
}

func (h *health) recover() {
	h.goodRun.Store(0)
	if h.degraded.CompareAndSwap(true, false) {
		h.recoveries.Add(1)
	}
}

// Stats are a Limiter's counters since it was made, for metrics. All
// counters only grow.
type Stats struct {
	// Degraded is true while decisions are node-local.
	Degraded bool
	// HealthyNodes is the last number of nodes seen in the heartbeat set
	// (at least 1).
	HealthyNodes int
	// SplitNodes is what shared budgets are split by while degraded: the
	// most nodes the last three beats saw (at least HealthyNodes).
	SplitNodes int
	// RedisDecisions and LocalDecisions count Allow calls decided by
	// Redis and by node-local buckets.
	RedisDecisions, LocalDecisions uint64
	// Allowed and Denied count Allow outcomes.
	Allowed, Denied uint64
	// RedisErrors counts failed Redis calls (timeouts included);
	// SlowCalls those slower than Config.SlowAfter.
	RedisErrors, SlowCalls uint64
	// Probes counts decisions sent to Redis while degraded.
	Probes uint64
	// Degradations and Recoveries count switches to and from degraded.
	Degradations, Recoveries uint64
}

func (h *health) stats() Stats {
	return Stats{
		Degraded: h.degraded.Load(), HealthyNodes: h.healthyNodes(), SplitNodes: h.splitNodes(),
		RedisDecisions: h.redisDecisions.Load(), LocalDecisions: h.localDecisions.Load(),
		Allowed: h.allowed.Load(), Denied: h.denied.Load(),
		RedisErrors: h.errors.Load(), SlowCalls: h.slow.Load(), Probes: h.probes.Load(),
		Degradations: h.degradations.Load(), Recoveries: h.recoveries.Load(),
	}
}

func (h *health) healthyNodes() int { return int(max(h.nodes.Load(), 1)) }

// splitNodes is what a degraded node splits shared budgets by: the most
// nodes its last beats saw (at least 1).
func (h *health) splitNodes() int { return int(max(h.split.Load(), h.nodes.Load(), 1)) }

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
	// seen are the counts of the last beats (the set's expiry window).
	seen [3]int64
	next int
}

// NewHeartbeat returns the heartbeat of node id (unique per process) for
// l, beating every interval; a node unseen for three intervals is gone.
//
// Default: every second when every <= 0.
func (l *Limiter) NewHeartbeat(id string, every time.Duration) *Heartbeat {
	if every <= 0 {
		every = time.Second
	}
	return &Heartbeat{l: l, id: id, every: every, script: luascript.New(heartbeatLua)}
}

// Beat records the node once and updates the count; one goroutine beats
// (Run). Its outcome also tells
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
	// A node whose beat came late (a loaded machine) drops out of the
	// set for a moment: if Redis failed then, splitting by that reading
	// would hand the late node's share out twice (a stressed CI run's
	// TestSharedBudgetHoldsAcrossModes: 900 admitted against 600). A
	// degraded node splits by the most nodes its last beats saw; after a
	// real departure it under-admits for those beats, the safe way.
	hb.seen[hb.next] = n
	hb.next = (hb.next + 1) % len(hb.seen)
	hb.l.h.split.Store(max(hb.seen[0], hb.seen[1], hb.seen[2]))
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
