// Package clock is a node's clock: the machine's time, plus a skew asked
// for by name in drills (ANTEROOM_CLOCK_SKEW), kept on Redis TIME.
//
// Every decision that orders nodes is taken by Redis TIME inside a script
// (joins, the frontier, claim deadlines, expiry). What a node still decides
// by its own clock — an admission token's iat, nbf and exp when it issues
// one, exp and nbf when it verifies one, a staff session's or a proof of
// work's expiry, when a sale closes, the ages the outbox and reconciler
// wait for — follows Now, which is the machine's clock corrected by the
// offset to Redis TIME measured on every frontier step. A node whose clock
// is off therefore neither accepts an expired token nor issues one that
// other nodes and gateways refuse as not yet valid.
package clock

import (
	"fmt"
	"sync/atomic"
	"time"
)

// MaxSkew is the largest drill skew Parse accepts.
const MaxSkew = 5 * time.Minute

// MaxRTT is the slowest round trip whose Redis TIME reading Observe
// trusts: the reading is taken somewhere inside the round trip, so the
// offset measured is off by at most half of it.
const MaxRTT = 250 * time.Millisecond

// Clock is a node's clock. It is safe for concurrent use. The zero value
// is not usable: use New.
type Clock struct {
	machine func() time.Time
	skew    time.Duration
	offset  atomic.Int64 // ns from Local to Redis TIME
	synced  atomic.Bool
}

// New returns a clock that reads the machine's clock shifted by skew (a
// drill setting; 0 in production) until Observe measures its offset to
// Redis TIME.
func New(skew time.Duration) *Clock {
	return &Clock{machine: time.Now, skew: skew}
}

// Local is the machine's clock plus the drill skew: what the node would
// believe on its own.
func (c *Clock) Local() time.Time { return c.machine().Add(c.skew) }

// Now is the node's time: Local corrected by the last offset measured to
// Redis TIME (none before the first Observe).
func (c *Clock) Now() time.Time { return c.At(c.machine()) }

// At is the node's time at the machine's instant t (a time.Now reading):
// Now without reading the machine's clock again, for a caller that has
// read it already (the HTTP edge reads the instant a request arrived).
func (c *Clock) At(t time.Time) time.Time {
	return t.Add(c.skew + time.Duration(c.offset.Load()))
}

// Offset is the last measured offset from Local to Redis TIME, and whether
// one was measured.
func (c *Clock) Offset() (time.Duration, bool) {
	return time.Duration(c.offset.Load()), c.synced.Load()
}

// Skew is the drill skew the clock was made with.
func (c *Clock) Skew() time.Duration { return c.skew }

// Observe takes one Redis TIME reading, server, from a call sent and
// answered at the given Local instants. A round trip slower than MaxRTT
// (a Redis pause, a slow link) is ignored: its reading could be anywhere in
// it. It reports whether the reading was used.
func (c *Clock) Observe(sent, received, server time.Time) bool {
	rtt := received.Sub(sent)
	if rtt < 0 || rtt > MaxRTT {
		return false
	}
	c.offset.Store(int64(server.Sub(sent.Add(rtt / 2))))
	c.synced.Store(true)
	return true
}

// ParseSkew reads a drill skew such as "+3s", "-1m30s" or "0". It refuses
// more than MaxSkew either way.
func ParseSkew(s string) (time.Duration, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("clock skew %q: %w", s, err)
	}
	if d > MaxSkew || d < -MaxSkew {
		return 0, fmt.Errorf("clock skew %s: at most ±%s (a drill setting)", d, MaxSkew)
	}
	return d, nil
}
