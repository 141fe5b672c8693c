package admission

import (
	"math"
	"time"

	"github.com/anteroom/anteroom/queue"
)

// Sunk waits: the door's endless queue (package door's Sink). A sunk
// ticket is answered as a real waiter of its queue would be — the
// default lane's, or the lane its number names (queue.Laned) — from the
// same view and with the same fields, until the real answer would come
// near that queue's frontier: from there on it shows a wait some way
// behind the frontier, whose length drifts every couple of minutes and
// whose ETA is that queue's pace's. It never shows admitted.

// lineOf is what a sunk wait in lane of s reads of its queue (the
// default lane for 0): the frontier, the measured pace, the rate its
// admissions pay for at most (admit_rate × its share) and its start;
// ok is false for a lane this view does not have.
func lineOf(s *Sale, lane int) (f float64, p Pace, rate float64, start time.Time, ok bool) {
	c := &s.Config
	if lane == 0 {
		return s.Frontier, s.Pace, c.AdmitRatePerSecond * c.DefaultShare(), c.WindowEnd(), true
	}
	if lane < 0 || lane > len(s.Lanes) || lane > len(c.Lanes) {
		return 0, Pace{}, 0, time.Time{}, false
	}
	v := &s.Lanes[lane-1]
	return v.Frontier, v.Pace, c.AdmitRatePerSecond * c.Lanes[lane-1].Share, c.Lanes[lane-1].Start(c), true
}

// SunkAhead is the least number of people a sunk ticket in lane of s (0:
// the default lane) is shown ahead of it at now: about 90 s of that
// queue's admission rate (at least 20), up to half again more, drifting
// every 2 minutes by key (the ticket's user, hashed): a queue's back
// moves as people leave and come back. A lane this view lacks counts as
// the default lane.
func SunkAhead(s *Sale, lane int, key uint64, now time.Time) int64 {
	_, _, rate, _, ok := lineOf(s, lane)
	if !ok {
		_, _, rate, _, _ = lineOf(s, 0)
	}
	base := max(int64(rate*90), 20)
	x := key ^ uint64(now.Unix()/120)*0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return base + int64(x%uint64(base/2+1))
}

// DecideSunk answers a status poll of a sunk ticket at p (see the
// comment above): DecidePlace's answer, with the wait of SunkAhead in
// p's queue (its lane, by p.Seq) wherever that answer is admitted or
// shows fewer people ahead: that queue's frontier, pace, rate and start,
// as a real waiter of it is shown. key drifts the wait (SunkAhead); now
// and rnd as for DecidePlace.
func DecideSunk(s *Sale, p queue.Place, key uint64, now time.Time, rnd func() float64) Decision {
	d := DecidePlace(s, p, now, rnd)
	switch d.State {
	case Admitted, Waiting, Paused:
	default: // prequeue, sold out, not selected, closed: as everyone
		return d
	}
	lane, _ := queue.Unlane(p.Seq)
	frontier, pace, rate, start, ok := lineOf(s, lane)
	if !ok {
		return d // a lane this view lacks: waiting, as a real ticket of it
	}
	ahead := SunkAhead(s, lane, key, now)
	if d.State != Admitted && d.Ahead >= ahead {
		return d
	}
	f := int64(math.Floor(frontier))
	out := Decision{State: d.State, Position: d.Position, Ahead: ahead, PollAfter: d.PollAfter, Lane: d.Lane}
	if d.Position > 0 || d.State == Admitted {
		out.Position = f + ahead + 1
	}
	if d.State == Paused {
		return out
	}
	out.State = Waiting
	out.ETA = ETA(ahead, pace, rate)
	if now.Before(start) {
		out.ETA += start.Sub(now)
	}
	u := rnd()
	out.PollAfter = jitter(clamp(out.ETA/4, MinPoll, PollCap(s)), u)
	return out
}
