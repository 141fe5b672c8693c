package admission

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

func sale(t *testing.T, mode event.Mode, frozen bool, w int64, f float64, soldOut, paused bool) *Sale {
	t.Helper()
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	c := event.Config{ID: "s", Supply: 10, StartsAt: start, Mode: mode, RandomWindowSeconds: 60, Paused: paused}
	c.Defaults()
	s := &Sale{Config: c, Reading: Reading{Frontier: f, Joined: 1000, Window: w, WindowFrozen: frozen}, SoldOut: soldOut, Rate: 10, Pace: Pace{Paid: 10, Rated: true}}
	if frozen && w > 0 {
		p, err := queue.NewPermutation(make([]byte, 32), w)
		if err != nil {
			t.Fatal(err)
		}
		s.Perm = p
	}
	return s
}

func TestDecide(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	during, after := start.Add(30*time.Second), start.Add(2*time.Minute)
	perm, _ := queue.NewPermutation(make([]byte, 32), 100)
	cases := []struct {
		name  string
		s     *Sale
		seq   int64
		now   time.Time
		state State
		pos   int64
	}{
		{"window still open", sale(t, event.FCFS, false, 0, 0, false, false), 5, during, Prequeue, 0},
		{"window member drawn", sale(t, event.FCFS, true, 100, 0, false, false), 5, after, Waiting, perm.Apply(5)},
		{"late joiner keeps seq", sale(t, event.FCFS, true, 100, 0, false, false), 150, after, Waiting, 150},
		{"admitted", sale(t, event.FCFS, true, 100, 150, false, false), 150, after, Admitted, 150},
		{"just beyond frontier", sale(t, event.FCFS, true, 100, 149.9, false, false), 150, after, Waiting, 150},
		{"sold out", sale(t, event.FCFS, true, 100, 10, true, false), 150, after, SoldOut, 150},
		{"lottery loser", sale(t, event.Lottery, true, 100, 10, true, false), 150, after, NotSelected, 150},
		{"paused", sale(t, event.FCFS, true, 100, 10, false, true), 150, after, Paused, 150},
		{"closed", sale(t, event.FCFS, true, 100, 10, false, false), 150, start.Add(48 * time.Hour), Closed, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.s, tc.seq, tc.now, rand.Float64)
			if d.State != tc.state || d.Position != tc.pos {
				t.Fatalf("got %s at %d, want %s at %d", d.State, d.Position, tc.state, tc.pos)
			}
			if d.PollAfter < MinPoll*8/10 || d.PollAfter > MaxPoll*12/10 {
				t.Errorf("poll after %s outside [%s, %s]", d.PollAfter, MinPoll, MaxPoll)
			}
		})
	}
}

func TestDecidePollGrowsWithDistance(t *testing.T) {
	now := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	s := sale(t, event.FCFS, true, 0, 0, false, false)
	near := Decide(s, 5, now, rand.Float64)
	far := Decide(s, 5000, now, rand.Float64)
	if near.ETA >= far.ETA || near.Ahead != 4 || far.Ahead != 4999 {
		t.Fatalf("near %+v, far %+v", near, far)
	}
	if far.PollAfter <= near.PollAfter {
		t.Errorf("far polls after %s, near after %s: want the back to poll less often", far.PollAfter, near.PollAfter)
	}
	if want := 500 * time.Second; far.ETA != want {
		t.Errorf("eta %s at 10/s with 4,999 ahead, want %s", far.ETA, want)
	}
}

// TestDecideETAWithinReach: a view whose frontier was measured moving
// ten times the configured rate (a burst of no-shows credited at once)
// must not promise a wait ten times shorter than the rate can pay for;
// nor may a lane's measured pace outrun the lane's share of the rate.
func TestDecideETAWithinReach(t *testing.T) {
	now := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	s := sale(t, event.FCFS, true, 0, 0, false, false) // admit_rate 100
	s.Rate, s.Pace = 1000, Pace{Paid: 1000, Rated: true}
	if d := Decide(s, 1000, now, rand.Float64); d.State != Waiting || d.ETA < 10*time.Second {
		t.Fatalf("999 ahead at a configured 100/s: %+v, want an ETA of at least 10s", d)
	}
	s.Config.Lanes = []event.Lane{{Name: "members", Share: 0.1}}
	s.Lanes = []LaneView{{Reading: Reading{Joined: 1000, WindowFrozen: true}, Rate: 10, Pace: Pace{Paid: 500, Rated: true}}}
	if d := Decide(s, queue.Laned(1, 100), now, rand.Float64); d.State != Waiting || d.Lane != 1 || d.ETA < 10*time.Second {
		t.Fatalf("99 ahead in a lane of 10/s: %+v, want an ETA of at least 10s", d)
	}
}

// TestDecideClosedByStaff: a closed room answers closed to the queued and
// the admitted alike, keeping their place; sold out and not selected stay
// what they are; reopening answers as before.
func TestDecideClosedByStaff(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	after := start.Add(2 * time.Minute)
	closed := func(s *Sale) *Sale {
		s.Config.Closed = &event.Closure{Message: "maintenance"}
		return s
	}
	cases := []struct {
		name  string
		s     *Sale
		seq   int64
		state State
		pos   int64
		ahead int64
	}{
		{"waiting keeps the place", closed(sale(t, event.FCFS, true, 100, 10, false, false)), 150, Closed, 150, 139},
		{"admitted gets no token", closed(sale(t, event.FCFS, true, 100, 150, false, false)), 150, Closed, 150, 0},
		{"paused too", closed(sale(t, event.FCFS, true, 100, 10, false, true)), 150, Closed, 150, 139},
		{"in the window", closed(sale(t, event.FCFS, false, 0, 0, false, false)), 5, Closed, 0, 0},
		{"sold out stays sold out", closed(sale(t, event.FCFS, true, 100, 10, true, false)), 150, SoldOut, 150, 0},
		{"not selected stays", closed(sale(t, event.Lottery, true, 100, 10, true, false)), 150, NotSelected, 150, 0},
		{"reopened", sale(t, event.FCFS, true, 100, 150, false, false), 150, Admitted, 150, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := after
			if tc.name == "in the window" {
				now = start.Add(30 * time.Second)
			}
			d := Decide(tc.s, tc.seq, now, func() float64 { return 0.5 })
			if d.State != tc.state || d.Position != tc.pos || d.Ahead != tc.ahead {
				t.Fatalf("got %s at %d (%d ahead), want %s at %d (%d ahead)", d.State, d.Position, d.Ahead, tc.state, tc.pos, tc.ahead)
			}
			if d.State == Closed && (d.ETA != 0 || d.PollAfter != MaxPoll || !d.ByStaff) {
				t.Errorf("closed: got ETA %s, poll after %s, by staff %v; want no ETA, %s, by staff", d.ETA, d.PollAfter, d.ByStaff, MaxPoll)
			}
			if d.State != Closed && d.ByStaff {
				t.Errorf("%s answered by staff", d.State)
			}
		})
	}
}
