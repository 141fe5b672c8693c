package admission

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/luascript"
	"github.com/redis/go-redis/v9"
)

//go:embed health.lua
var healthLua string

// Health keeps each sale's shop health state in Redis, shared by every
// node: observations (probes of the shop's health URL, error rates the
// shop pushes) go through one script (health.lua) that holds admission
// after fail_after failing observations in a row and releases it after
// recover_after healthy ones. The frontier script reads the hold on every
// tick (Step.HealthChecked). The hold is separate from a staff pause: a
// recovery never resumes what staff paused. Safe for concurrent use.
type Health struct {
	rdb     redis.UniversalClient
	observe *redis.Script
}

// NewHealth returns a Health on rdb.
func NewHealth(rdb redis.UniversalClient) *Health {
	return &Health{rdb: rdb, observe: luascript.New(healthLua)}
}

// Observation is one health signal.
type Observation struct {
	// Healthy is the signal's verdict.
	Healthy bool
	// Source is "probe" (the nodes polled the URL) or "push" (the shop
	// sent its error rate).
	Source string
	// Detail says what was seen, for staff (at most 200 bytes kept).
	Detail string
}

// HealthState is a sale's health hold as the last observation left it.
type HealthState struct {
	// Held is true while the health check holds admission.
	Held bool `json:"held"`
	// Changes counts how often Held changed.
	Changes int64 `json:"changes"`
	// Failures and Successes are the failing and healthy observations in
	// a row.
	Failures  int64 `json:"failures_in_a_row"`
	Successes int64 `json:"successes_in_a_row"`
	// Reason is the failing observation that held admission last.
	Reason string `json:"reason,omitempty"`
	// Last is the latest observation, from Source, at Checked.
	Last    string    `json:"last,omitempty"`
	Source  string    `json:"source,omitempty"`
	Checked time.Time `json:"checked_at,omitzero"`
	// Since is when Held last changed.
	Since time.Time `json:"since,omitzero"`
}

// Observe counts one observation for sale ev with the thresholds of h and
// returns the hold after it and whether it changed.
func (hl *Health) Observe(ctx context.Context, ev string, h *event.HealthCheck, o Observation) (held, changed bool, err error) {
	if len(o.Detail) > 200 {
		o.Detail = o.Detail[:200]
	}
	ok := 0
	if o.Healthy {
		ok = 1
	}
	res, err := hl.observe.Run(ctx, hl.rdb, []string{healthKey(ev)}, ok, h.FailAfter, h.RecoverAfter, o.Source, o.Detail).Int64Slice()
	if err != nil {
		return false, false, fmt.Errorf("health %s: %w", ev, err)
	}
	if len(res) != 3 {
		return false, false, fmt.Errorf("health %s: unexpected reply %v", ev, res)
	}
	return res[0] == 1, res[2] == 1, nil
}

// Reset releases sale ev's hold and clears its counts, for a sale whose
// health check was removed: a check added later starts afresh. A release
// counts as a change (the lifecycle records it as resumed).
func (hl *Health) Reset(ctx context.Context, ev string) error {
	err := hl.observe.Run(ctx, hl.rdb, []string{healthKey(ev)}, "reset", 1, 1, "staff", "health check removed").Err()
	if err != nil {
		return fmt.Errorf("health %s: reset: %w", ev, err)
	}
	return nil
}

// State reads sale ev's health state.
func (hl *Health) State(ctx context.Context, ev string) (HealthState, error) {
	m, err := hl.rdb.HGetAll(ctx, healthKey(ev)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return HealthState{}, fmt.Errorf("health %s: %w", ev, err)
	}
	num := func(k string) int64 { n, _ := strconv.ParseInt(m[k], 10, 64); return n }
	at := func(k string) time.Time {
		if n := num(k); n > 0 {
			return time.UnixMilli(n).UTC()
		}
		return time.Time{}
	}
	return HealthState{
		Held: m["held"] == "1", Changes: num("gen"), Failures: num("fails"), Successes: num("oks"),
		Reason: m["reason"], Last: m["last"], Source: m["source"], Checked: at("checked"), Since: at("since"),
	}, nil
}

// TakeProbe claims the probe of sale ev's health URL for the next interval:
// true for exactly one caller across every node per interval (SET NX PX).
func (hl *Health) TakeProbe(ctx context.Context, ev string, interval time.Duration) (bool, error) {
	ok, err := hl.rdb.SetNX(ctx, healthKey(ev)+":probe", 1, interval).Result()
	if err != nil {
		return false, fmt.Errorf("health %s: probe slot: %w", ev, err)
	}
	return ok, nil
}
