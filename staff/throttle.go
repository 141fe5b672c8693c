package staff

import (
	"context"
	_ "embed"
	"fmt"
	"net/netip"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

var (
	//go:embed failed.lua
	failedLua string
	//go:embed blocked.lua
	blockedLua string
)

// Throttle counts failed admin authentications per client address in
// Redis. After Max failures within Window of the first one, the address is
// blocked until the window ends: Blocked answers how long is left. The
// counter is shared by every node. Addresses are counted per IPv4 address
// and per IPv6 /64 (one host's usual allocation).
//
// A *Throttle is safe for concurrent use.
type Throttle struct {
	rdb             redis.Scripter
	failed, blocked *redis.Script
	max             int64
	window          time.Duration
}

// Default throttle settings.
const (
	DefaultMaxFailures = 5
	DefaultWindow      = 10 * time.Minute
)

// NewThrottle returns a throttle blocking an address after max failures
// within window (zero or negative values take the defaults).
func NewThrottle(rdb redis.Scripter, max int, window time.Duration) *Throttle {
	if max <= 0 {
		max = DefaultMaxFailures
	}
	if window <= 0 {
		window = DefaultWindow
	}
	return &Throttle{rdb: rdb, failed: luascript.New(failedLua), blocked: luascript.New(blockedLua), max: int64(max), window: window}
}

// Blocked returns how long addr stays blocked; 0 when it may try.
func (t *Throttle) Blocked(ctx context.Context, addr string) (time.Duration, error) {
	n, ttl, err := t.run(ctx, t.blocked, addr)
	if err != nil || n < t.max {
		return 0, err
	}
	return ttl, nil
}

// Failed counts a failed attempt of addr and returns how long addr is now
// blocked (0 while under the limit).
func (t *Throttle) Failed(ctx context.Context, addr string) (time.Duration, error) {
	n, ttl, err := t.run(ctx, t.failed, addr, t.window.Milliseconds())
	if err != nil || n < t.max {
		return 0, err
	}
	return ttl, nil
}

func (t *Throttle) run(ctx context.Context, s *redis.Script, addr string, args ...any) (n int64, ttl time.Duration, err error) {
	reply, err := s.Run(ctx, t.rdb, []string{failKey(addr)}, args...).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("staff throttle: %w", err)
	}
	if len(reply) != 2 {
		return 0, 0, fmt.Errorf("staff throttle: reply %v", reply)
	}
	return reply[0], time.Duration(max(reply[1], 1)) * time.Millisecond, nil
}

// failKey is the failure counter of addr: an IPv6 address counts for its
// /64, anything unparsable for itself.
func failKey(addr string) string {
	if a, err := netip.ParseAddr(addr); err == nil {
		a = a.Unmap()
		if a.Is6() {
			p, _ := a.Prefix(64)
			addr = p.String()
		} else {
			addr = a.String()
		}
	}
	return "ar:{staff}:fail:" + addr
}
