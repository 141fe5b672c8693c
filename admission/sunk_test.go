package admission

import (
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// TestDecideSunk: a sunk ticket far back is answered exactly as a real
// one; one the frontier reaches (or passes) keeps waiting at least
// SunkAhead behind it, with a real waiter's fields, and is never admitted,
// however the frontier moves.
func TestDecideSunk(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	after := start.Add(2 * time.Minute)
	half := func() float64 { return 0.5 }
	s := sale(t, event.FCFS, true, 100, 150, false, false)
	far := queue.Place{Seq: 500000}
	if got, want := DecideSunk(s, far, 7, after, half), DecidePlace(s, far, after, half); got != want {
		t.Fatalf("far back: got %+v, want the real answer %+v", got, want)
	}
	for f := 150.0; f < 200000; f += 9973 {
		s := sale(t, event.FCFS, true, 100, f, false, false)
		for _, seq := range []int64{120, 151, int64(f) + 3, int64(f) + 50} {
			now := after.Add(time.Duration(f) * time.Millisecond)
			d := DecideSunk(s, queue.Place{Seq: seq}, 7, now, half)
			if d.State != Waiting {
				t.Fatalf("frontier %.0f, seq %d: %s, want waiting", f, seq, d.State)
			}
			if d.Ahead < 20 || d.Position != int64(f)+d.Ahead+1 && d.Position != seq {
				t.Fatalf("frontier %.0f, seq %d: %+v, not behind the frontier", f, seq, d)
			}
			if d.ETA <= 0 || d.PollAfter < MinPoll*8/10 || d.PollAfter > PollCap(s)*12/10 {
				t.Fatalf("frontier %.0f, seq %d: ETA %s poll %s, want a real waiter's", f, seq, d.ETA, d.PollAfter)
			}
		}
	}
	// The end of the sale and a sold-out sale answer as they do everyone.
	if d := DecideSunk(sale(t, event.FCFS, true, 100, 150, true, false), queue.Place{Seq: 120}, 7, after, half); d.State != SoldOut {
		t.Fatalf("sold out: %s", d.State)
	}
}
