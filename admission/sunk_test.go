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

// TestDecideSunkLane: a sunk ticket of a lane waits in that lane as its
// real members do: behind the lane's frontier, at least 90 s of the
// lane's rate back (not the default lane's), with the ETA the lane's pace
// and rate give and the lane named; far back it is the real answer. The
// default lane here admits 90 a second and is still in its prequeue; the
// lane admits 10, started, at a measured 8.
func TestDecideSunkLane(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	now := start.Add(-10 * time.Minute) // before the sale: its window is open
	half := func() float64 { return 0.5 }
	s := sale(t, event.FCFS, false, 0, 0, false, false) // admit_rate 100
	laneStart := start.Add(-time.Hour)
	s.Config.Lanes = []event.Lane{{Name: "members", Share: 0.1, StartsAt: &laneStart}}
	lanePace := Pace{Paid: 8, Rated: true}
	for _, f := range []float64{0, 40, 5000, 123456} {
		s.Lanes = []LaneView{{Reading: Reading{Frontier: f, Joined: int64(f) + 50, WindowFrozen: true}, Rate: 10, Pace: lanePace}}
		for _, n := range []int64{1, int64(f) + 1, int64(f) + 300} {
			p := queue.Place{Seq: queue.Laned(1, n)}
			d := DecideSunk(s, p, 7, now, half)
			least := SunkAhead(s, 1, 7, now)
			if least < 900 || least > 1350 {
				t.Fatalf("SunkAhead of the lane: %d, want 90 s of its 10/s (900 to 1,350)", least)
			}
			want := Decision{State: Waiting, Lane: 1, Ahead: least, Position: int64(f) + least + 1, ETA: ETA(least, lanePace, 10)}
			want.PollAfter = jitter(clamp(want.ETA/4, MinPoll, PollCap(s)), 0.5)
			if d != want {
				t.Fatalf("frontier %.0f, number %d: %+v, want %+v", f, n, d, want)
			}
		}
	}
	far := queue.Place{Seq: queue.Laned(1, 200000)}
	if got, want := DecideSunk(s, far, 7, now, half), DecidePlace(s, far, now, half); got != want {
		t.Fatalf("far back in the lane: got %+v, want the real answer %+v", got, want)
	}
	// A lane this view does not have yet: as a real ticket of it.
	s.Lanes = nil
	if got, want := DecideSunk(s, queue.Place{Seq: queue.Laned(1, 3)}, 7, now, half), DecidePlace(s, queue.Place{Seq: queue.Laned(1, 3)}, now, half); got != want {
		t.Fatalf("a lane the view lacks: got %+v, want %+v", got, want)
	}
}
