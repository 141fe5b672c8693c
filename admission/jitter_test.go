package admission

import (
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// TestDecideJitter steps the poll jitter through chosen draws: DecidePlace
// takes its randomness as a parameter, so each answer is exact. A draw u
// makes PollAfter base × (0.8 + 0.4u); answers that end the polling
// (sold out, closed) are not jittered.
func TestDecideJitter(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	during, after := start.Add(30*time.Second), start.Add(2*time.Minute)
	cases := []struct {
		name     string
		s        *Sale
		seq      int64
		now      time.Time
		state    State
		base     time.Duration
		jittered bool
	}{
		// The window closes at start + 60 s: 30 s to go.
		{"prequeue", sale(t, event.FCFS, false, 0, 0, false, false), 5, during, Prequeue, 30 * time.Second, true},
		// 149 ahead at 10/s: an ETA of 15 s, asked again at a quarter of it.
		{"waiting", sale(t, event.FCFS, true, 100, 0, false, false), 150, after, Waiting, 3750 * time.Millisecond, true},
		{"admitted", sale(t, event.FCFS, true, 100, 150, false, false), 150, after, Admitted, MaxPoll, true},
		{"paused", sale(t, event.FCFS, true, 100, 10, false, true), 150, after, Paused, 5 * time.Second, true},
		{"a lane this view lacks", sale(t, event.FCFS, true, 100, 0, false, false), queue.Laned(1, 1), after, Waiting, MinPoll, true},
		{"sold out", sale(t, event.FCFS, true, 100, 10, true, false), 150, after, SoldOut, MaxPoll, false},
		{"closed", sale(t, event.FCFS, true, 100, 10, false, false), 150, start.Add(48 * time.Hour), Closed, MaxPoll, false},
	}
	draws := []struct {
		u      float64
		factor float64
	}{{0, 0.8}, {0.5, 1}, {0.75, 1.1}, {0.999, 1.1996}}
	for _, tc := range cases {
		for _, dr := range draws {
			calls := 0
			rnd := func() float64 { calls++; return dr.u }
			d := DecidePlace(tc.s, queue.Place{Seq: tc.seq}, tc.now, rnd)
			if d.State != tc.state {
				t.Fatalf("%s: got %s, want %s", tc.name, d.State, tc.state)
			}
			want := tc.base
			if tc.jittered {
				want = time.Duration(float64(tc.base) * dr.factor)
			}
			// float64 rounding may cost the product a nanosecond.
			if diff := d.PollAfter - want; diff < -time.Nanosecond || diff > time.Nanosecond {
				t.Errorf("%s, draw %v: poll after %s, want %s", tc.name, dr.u, d.PollAfter, want)
			}
			if calls > 1 {
				t.Errorf("%s: rnd called %d times, want at most once", tc.name, calls)
			}
		}
	}
}
