// Package limit keeps anteroom's rate limits: token buckets shared by every
// node in Redis, with node-local buckets to fall back on when Redis is slow
// or down, and reservations that bind a device or payment fingerprint to
// one user.
//
// Each bucket is one Redis hash under a hash tag of its own, changed only by
// bucket.lua, which reads Redis TIME, refills, spends and sets a PEXPIRE in
// one atomic call: nodes with skewed clocks agree, and buckets spread over a
// Redis Cluster. A request's rules are decided in two pipelined phases, the
// caller's own buckets (IP, device, user) first and the shared ones (global,
// event) only if those passed, so a refused caller never spends a budget
// that others share.
//
// When Redis calls fail, or are slow several times in a row, the Limiter
// degrades: it decides with node-local buckets, giving shared budgets
// limit/healthy-nodes each (the count comes from the heartbeat set every
// node refreshes), probes Redis with a small share of decisions and
// switches back once Redis answers well again. Degraded and Stats expose the
// state for metrics. The package knows nothing of HTTP.
package limit

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

//go:embed bucket.lua
var bucketLua string

// Client is the part of a Redis client the Limiter uses; *redis.Client
// and *redis.ClusterClient satisfy it. It must honour context deadlines,
// or a stalled Redis holds every decision for the client's read timeout:
// use ClientFor.
type Client interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
}

// Config tunes degradation. The zero value takes every default.
type Config struct {
	// Timeout bounds one Redis call; a call that takes longer fails.
	//
	// Default: 100ms
	Timeout time.Duration
	// SlowAfter is the latency above which a call counts as slow.
	//
	// Default: 25ms
	SlowAfter time.Duration
	// SlowCalls is how many slow calls in a row degrade the Limiter.
	//
	// Default: 3
	SlowCalls int
	// ProbeFraction is the share of degraded decisions that also go to
	// Redis to see whether it has recovered.
	//
	// Default: 0.02
	ProbeFraction float64
	// RecoverAfter is how many good calls in a row end degradation.
	//
	// Default: 3
	RecoverAfter int
	// MaxLocalKeys bounds the node-local buckets.
	//
	// Default: 100,000
	MaxLocalKeys int
}

func (c *Config) defaults() {
	if c.Timeout <= 0 {
		c.Timeout = 100 * time.Millisecond
	}
	if c.SlowAfter <= 0 {
		c.SlowAfter = 25 * time.Millisecond
	}
	if c.SlowCalls < 1 {
		c.SlowCalls = 3
	}
	if !(c.ProbeFraction > 0) {
		c.ProbeFraction = 0.02
	}
	if c.RecoverAfter < 1 {
		c.RecoverAfter = 3
	}
}

// Limiter decides whether a request may pass its rules. It is safe for
// concurrent use; the zero value is not usable: use New.
type Limiter struct {
	rdb    Client
	cfg    Config
	bucket *redis.Script
	local  *Local
	h      health
	now    func() time.Time
}

// New returns a Limiter on rdb.
func New(rdb Client, cfg Config) *Limiter {
	cfg.defaults()
	l := &Limiter{rdb: rdb, cfg: cfg, bucket: luascript.New(bucketLua), local: NewLocal(cfg.MaxLocalKeys), now: time.Now}
	l.h.cfg = &l.cfg
	return l
}

// Degraded reports whether decisions are currently node-local.
func (l *Limiter) Degraded() bool { return l.h.degraded.Load() }

// Stats returns the Limiter's counters.
func (l *Limiter) Stats() Stats { return l.h.stats() }

// Allow spends one token from each rule's bucket and says whether the
// request may pass. Per-caller rules are checked before shared ones, which
// are not touched when a per-caller rule refuses. Allow never fails: when
// Redis does not answer within Config.Timeout, node-local buckets decide.
func (l *Limiter) Allow(ctx context.Context, rules ...Rule) Decision {
	caller, shared := split(rules)
	d := Decision{Allowed: true, Remaining: -1}
	if len(caller)+len(shared) == 0 {
		return d
	}
	for _, phase := range [][]Rule{caller, shared} {
		if len(phase) == 0 {
			continue
		}
		l.decide(ctx, phase, &d)
		if !d.Allowed {
			break
		}
	}
	if d.Local {
		l.h.localDecisions.Add(1)
	} else {
		l.h.redisDecisions.Add(1)
	}
	if d.Allowed {
		l.h.allowed.Add(1)
	} else {
		l.h.denied.Add(1)
	}
	return d
}

// decide runs one phase on Redis or, failing that, locally, and folds the
// outcome into d.
func (l *Limiter) decide(ctx context.Context, rules []Rule, d *Decision) {
	if use, probe := l.h.useRedis(); use {
		replies, err := l.redisPhase(ctx, rules)
		if probe {
			l.h.endProbe()
		}
		if err == nil {
			for i, rep := range replies {
				fold(d, rules[i].Dim, rep[0] == 1, float64(rep[1]), time.Duration(rep[2])*time.Millisecond)
			}
			return
		}
	}
	d.Local = true
	now := l.now()
	nodes := l.h.splitNodes()
	for _, r := range rules {
		lim := r.Limit
		if r.Dim.Shared() {
			lim = lim.share(nodes)
		}
		ok, left, retry := l.local.Take(r.Key(), lim, now)
		fold(d, r.Dim, ok, left, retry)
	}
}

// fold adds one bucket's answer to d: the first refusal names the
// dimension, the longest wait wins, the fewest tokens left are reported.
func fold(d *Decision, dim Dim, ok bool, left float64, retry time.Duration) {
	if n := int64(max(left, 0)); d.Remaining < 0 || n < d.Remaining {
		d.Remaining = n
	}
	if ok {
		return
	}
	d.Refused++
	if d.Allowed {
		d.Allowed, d.Dim = false, dim
	}
	d.RetryAfter = max(d.RetryAfter, retry)
}

// redisPhase runs bucket.lua once per rule, pipelined, and records how
// Redis did. A caller's own cancellation is not held against Redis.
func (l *Limiter) redisPhase(ctx context.Context, rules []Rule) ([][3]int64, error) {
	cctx, cancel := context.WithTimeout(ctx, l.cfg.Timeout)
	defer cancel()
	start := time.Now()
	replies, err := l.run(cctx, rules)
	if ctx.Err() == nil {
		l.h.observe(err, time.Since(start))
	}
	return replies, err
}

func (l *Limiter) run(ctx context.Context, rules []Rule) ([][3]int64, error) {
	out := make([][3]int64, len(rules))
	if len(rules) == 1 {
		r := rules[0]
		res, err := l.bucket.Run(ctx, l.rdb, []string{r.Key()}, r.Limit.Rate, r.Limit.burst(), 1).Int64Slice()
		if err != nil {
			return nil, fmt.Errorf("limit %s: %w", r.Key(), err)
		}
		return out, decode(res, &out[0])
	}
	pipe := l.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(rules))
	for i, r := range rules {
		cmds[i] = l.bucket.EvalSha(ctx, pipe, []string{r.Key()}, r.Limit.Rate, r.Limit.burst(), 1)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	for i, cmd := range cmds {
		res, err := cmd.Int64Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// An empty script cache (restart, failover): Run loads it.
			r := rules[i]
			res, err = l.bucket.Run(ctx, l.rdb, []string{r.Key()}, r.Limit.Rate, r.Limit.burst(), 1).Int64Slice()
		}
		if err != nil {
			return nil, fmt.Errorf("limit %s: %w", rules[i].Key(), err)
		}
		if err := decode(res, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

var errReply = errors.New("limit: unexpected reply from bucket.lua")

func decode(res []int64, into *[3]int64) error {
	if len(res) != 3 {
		return errReply
	}
	copy(into[:], res)
	return nil
}

// ClientFor returns a Redis client for a Limiter: the same server (or
// cluster) and credentials as rdb, with a connection pool of its own, so
// that limiter calls never queue behind slow claims, and three changes. It
// honours context deadlines (go-redis ignores them by default and waits for
// its read timeout), so a stalled Redis holds a decision for
// Config.Timeout only; it does not retry commands; and it dials once, so a
// Redis that is down is noticed at once. Close it when done.
func ClientFor(rdb redis.UniversalClient) (redis.UniversalClient, error) {
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		return redis.NewClient(&redis.Options{
			Network: o.Network, Addr: o.Addr, Dialer: o.Dialer, Protocol: o.Protocol,
			Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider,
			DB: o.DB, TLSConfig: o.TLSConfig, PoolSize: o.PoolSize,
			ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
		}), nil
	case *redis.ClusterClient:
		o := c.Options()
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: o.Addrs, Dialer: o.Dialer, Protocol: o.Protocol,
			Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider,
			TLSConfig: o.TLSConfig, PoolSize: o.PoolSize,
			ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1,
		}), nil
	}
	return nil, fmt.Errorf("limit: unsupported Redis client %T", rdb)
}
