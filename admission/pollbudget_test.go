package admission

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
)

// aggregatePolls is the status polls per second that everyone waiting in
// a queue of n people asks for at admission rate rate: the sum of
// 1/poll_after over every waiting position (sampled every stride places).
func aggregatePolls(t *testing.T, n int64, rate float64) float64 {
	t.Helper()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c := event.Config{ID: "s", Supply: 10, StartsAt: start, Mode: event.FCFS, AdmitRatePerSecond: rate}
	c.Defaults()
	s := &Sale{Config: c, Reading: Reading{Joined: n, WindowFrozen: true}, Rate: rate}
	now := start.Add(time.Minute)
	const stride = 97
	var sum float64
	for seq := int64(1); seq <= n; seq += stride {
		d := Decide(s, seq, now, rand.Float64)
		if d.State != Waiting {
			t.Fatalf("seq %d: %s", seq, d.State)
		}
		sum += stride / d.PollAfter.Seconds()
	}
	return sum
}

// The back of a long queue polls less often the longer the queue, so the
// aggregate poll load of one queue is bounded: ten times the people do not
// cost ten times the polls.
func TestAggregatePollRateBounded(t *testing.T) {
	const rate = 200
	oneM := aggregatePolls(t, 1_000_000, rate)
	tenM := aggregatePolls(t, 10_000_000, rate)
	t.Logf("polls/s asked for at %d admissions/s: 1M waiting %.0f, 10M waiting %.0f", rate, oneM, tenM)
	// The front (eta/4 under 30 s) asks about 4·R·(1 + ln(cap/1 s)); the
	// back at most the budget, whatever its length.
	if limit := 15_000.0; oneM > limit || tenM > limit {
		t.Errorf("aggregate poll rate 1M: %.0f/s, 10M: %.0f/s, want both ≤ %.0f/s", oneM, tenM, limit)
	}
	if tenM > 1.5*oneM {
		t.Errorf("10M waiting ask for %.0f polls/s, 1M for %.0f: the aggregate grows with the queue", tenM, oneM)
	}
}
