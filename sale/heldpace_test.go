package sale_test

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestHeldPaceKept: admission held by a pause or by staff closing the room
// measures no pace. Through the held ticks the view keeps the pace it
// measured before (a frontier that stands still is not a rate of 0), so
// the wait estimates after it — and the answers the report's ETA error
// samples — are those of before, for a closure as for a pause. Before the
// closure counted as held, every closed tick measured 0 and an estimate
// after a 2 s closure was many times the one before.
func TestHeldPaceKept(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		hold func(*event.Config)
	}{
		{"pause", func(c *event.Config) { c.Paused = true }},
		{"closure", func(c *event.Config) { c.Closed = &event.Closure{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := testenv.StartRedis(t).Client(t)
			now := time.Now()
			g := newSaleRig(t, rdb, event.Config{
				ID: "held", Supply: 10, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Minute),
				EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 100, NoShowGraceSeconds: 600,
			}, 1_000_000)
			first := g.tick(t, "a first reading", func(s *admission.Sale) bool { return !s.ServerTime.IsZero() })
			before := g.tick(t, "a measured pace", func(s *admission.Sale) bool {
				return s.Pace.Rated && s.ServerTime.Sub(first.ServerTime) >= 300*time.Millisecond
			})
			configs := event.NewStore(rdb)
			set := func(change func(*event.Config)) {
				t.Helper()
				cfg, err := configs.Get(ctx, "held")
				if err != nil {
					t.Fatal(err)
				}
				change(&cfg)
				if _, err := configs.Put(ctx, cfg); err != nil {
					t.Fatal(err)
				}
			}
			set(tc.hold)
			// The first held tick still measures the stretch from the
			// last open reading (the frontier moved until the hold).
			start := g.tick(t, "the first held tick", func(s *admission.Sale) bool { return s.Config.Paused || s.Config.IsClosed() })
			kept := start.Pace.Paid
			if kept < before.Pace.Paid/2 {
				t.Fatalf("pace %.1f/s at the first held tick, want about %.1f/s (measured before the hold)", kept, before.Pace.Paid)
			}
			g.tick(t, "2 s of held ticks", func(s *admission.Sale) bool {
				if s.Pace.Paid != kept {
					t.Fatalf("pace %.3f/s after %v held (%s), want %.3f/s kept: a held frontier measured as a pace",
						s.Pace.Paid, s.ServerTime.Sub(start.ServerTime), tc.name, kept)
				}
				return s.ServerTime.Sub(start.ServerTime) >= 2*time.Second
			})
			set(func(c *event.Config) { c.Paused, c.Closed = false, nil })
			after := g.tick(t, "the first tick after the hold", func(s *admission.Sale) bool { return !s.Config.Paused && !s.Config.IsClosed() })
			// The estimate of a person 5000 places back, from each view's
			// pace (admission.ETA, what Decide gives a waiting person; not
			// Decide itself, which maps a queue number through the shuffle
			// window's draw to a position anywhere in the window). The
			// first open tick measures the stretch from the last held
			// reading, so it keeps at least 0.8 of the held pace.
			rate := after.Config.AdmitRatePerSecond * after.Config.DefaultShare()
			held, a := admission.ETA(5000, start.Pace, rate), admission.ETA(5000, after.Pace, rate)
			if a > held*13/10 {
				t.Errorf("estimate 5000 places back: %v after the %s, %v through it (%v before it); want about the same",
					a, tc.name, held, admission.ETA(5000, before.Pace, rate))
			}
		})
	}
}
