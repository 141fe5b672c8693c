package admission

import (
	"math"
	"time"

	"github.com/anteroom/anteroom/queue"
)

// Sunk waits: the door's endless queue (package door's Sink). A sunk
// ticket is answered as a real waiter would be, from the same view and
// with the same fields, until the real answer would come near the
// frontier: from there on it shows a wait some way behind the frontier,
// whose length drifts every couple of minutes and whose ETA is the real
// pace's. It never shows admitted.

// SunkAhead is the least number of people a sunk ticket of s is shown
// ahead of it at now: about 90 s of the sale's admission rate (at least
// 20), up to half again more, drifting every 2 minutes by key (the
// ticket's user, hashed): a queue's back moves as people leave and come
// back.
func SunkAhead(s *Sale, key uint64, now time.Time) int64 {
	c := &s.Config
	base := max(int64(c.AdmitRatePerSecond*c.DefaultShare()*90), 20)
	x := key ^ uint64(now.Unix()/120)*0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return base + int64(x%uint64(base/2+1))
}

// DecideSunk answers a status poll of a sunk ticket at p (see the
// comment above): DecidePlace's answer, with the wait of SunkAhead
// wherever that answer is admitted or shows fewer people ahead. key
// drifts the wait (SunkAhead); now and rnd as for DecidePlace.
func DecideSunk(s *Sale, p queue.Place, key uint64, now time.Time, rnd func() float64) Decision {
	d := DecidePlace(s, p, now, rnd)
	switch d.State {
	case Admitted, Waiting, Paused:
	default: // prequeue, sold out, not selected, closed: as everyone
		return d
	}
	ahead := SunkAhead(s, key, now)
	if d.State != Admitted && d.Ahead >= ahead {
		return d
	}
	c := &s.Config
	f := int64(math.Floor(s.Frontier))
	out := Decision{State: d.State, Position: d.Position, Ahead: ahead, PollAfter: d.PollAfter}
	if d.Position > 0 || d.State == Admitted {
		out.Position = f + ahead + 1
	}
	if d.State == Paused {
		return out
	}
	out.State = Waiting
	out.ETA = ETA(ahead, s.Pace, c.AdmitRatePerSecond*c.DefaultShare())
	if start := c.WindowEnd(); now.Before(start) {
		out.ETA += start.Sub(now)
	}
	u := rnd()
	out.PollAfter = jitter(clamp(out.ETA/4, MinPoll, PollCap(s)), u)
	return out
}
