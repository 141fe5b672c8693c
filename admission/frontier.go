// Package admission decides who is admitted: the frontier F (positions ≤ F
// are admitted) advances at a fixed rate from the moment the window closes,
// driven by a leaderless Redis script every node calls on its tick, and each
// node keeps a snapshot of every sale so status answers need no Redis.
package admission

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

//go:embed advance.lua
var advanceLua string

// Frontier advances and reads an event's admission frontier. It is safe for
// concurrent use.
type Frontier struct {
	rdb     redis.Scripter
	advance *redis.Script
}

// NewFrontier returns a Frontier on rdb.
func NewFrontier(rdb redis.Scripter) *Frontier {
	return &Frontier{rdb: rdb, advance: redis.NewScript(advanceLua)}
}

// Reading is the state of one event's queue at one Redis instant.
type Reading struct {
	// Frontier is F: every position ≤ Frontier is admitted.
	Frontier float64
	// Joined is how many people have joined.
	Joined int64
	// Window is the frozen window size W, or 0 while the window is open.
	Window int64
	// WindowFrozen is true once W is fixed.
	WindowFrozen bool
	// ServerTime is Redis TIME when the reading was taken.
	ServerTime time.Time
}

// Advance moves event ev's frontier by rate × time since the last advance
// (nothing while hold is true) and returns the new reading. start is when
// admission begins (the window's end).
func (f *Frontier) Advance(ctx context.Context, ev string, start time.Time, rate float64, hold bool) (Reading, error) {
	k := queue.KeysFor(ev)
	h := 0
	if hold {
		h = 1
	}
	res, err := f.advance.Run(ctx, f.rdb, []string{frontierKey(ev), k.Seq, k.Window}, start.UnixMilli(), rate, h).Int64Slice()
	if err != nil {
		return Reading{}, fmt.Errorf("advance %s: %w", ev, err)
	}
	if len(res) != 4 {
		return Reading{}, fmt.Errorf("advance %s: unexpected reply %v", ev, res)
	}
	return Reading{
		Frontier:     float64(res[0]) / 1000,
		Joined:       res[1],
		Window:       max(res[2], 0),
		WindowFrozen: res[2] >= 0,
		ServerTime:   time.UnixMilli(res[3]),
	}, nil
}

func frontierKey(ev string) string { return "ar:{" + ev + "}:adm" }
