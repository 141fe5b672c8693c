package admission

import (
	"math"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// State is what a queued person sees.
type State string

// States of a queued person, as the public API names them.
const (
	Prequeue    State = "prequeue"
	Waiting     State = "waiting"
	Admitted    State = "admitted"
	SoldOut     State = "sold_out"
	NotSelected State = "not_selected"
	Paused      State = "paused"
	Closed      State = "closed"
)

// Decision is the answer to one status poll.
type Decision struct {
	State State
	// Position is 0 while the window is open (not drawn yet).
	Position int64
	// Ahead is how many people before this one are not yet admitted.
	Ahead int64
	// ETA is the expected wait until admission.
	ETA time.Duration
	// PollAfter is when the client should ask again, jittered.
	PollAfter time.Duration
	// Lane is the lane's index (0: the default lane); Position and Ahead
	// count within it, and the admission's position is
	// queue.Laned(Lane, Position).
	Lane int
	// ByStaff marks a Closed answer of a room staff closed (the place is
	// kept: keep polling), not of a sale that has ended.
	ByStaff bool
}

// Poll limits: the front polls every MinPoll, the far back every MaxPoll,
// or less often once the queue is longer than MaxPoll × PollBudget.
const (
	MinPoll = time.Second
	MaxPoll = 30 * time.Second
	// PollBudget is the status polls per second, over all nodes, that the
	// back of one queue may ask for: with W people waiting, nobody waits
	// longer between polls than max(MaxPoll, W / PollBudget), so the
	// people at that cap ask for at most PollBudget polls/s however long
	// the queue (1,000,000 waiting: every 200 s, not every 30 s).
	PollBudget = 5000
)

// PollCap is the longest a waiting person of sale s is told to wait
// between polls: MaxPoll, or W / PollBudget seconds once W, the people
// waiting in the node's view, exceeds MaxPoll × PollBudget (150,000).
func PollCap(s *Sale) time.Duration {
	waiting := s.Joined - int64(math.Floor(s.Frontier))
	return max(MaxPoll, time.Duration(float64(waiting)/PollBudget*float64(time.Second)))
}

// Decide answers a status poll for sequence number seq of a queue on one
// slot (JoinShards = 1) from the node's view of the sale, without Redis;
// now and rnd as for DecidePlace.
func Decide(s *Sale, seq int64, now time.Time, rnd func() float64) Decision {
	return DecidePlace(s, queue.Place{Seq: seq}, now, rnd)
}

// DecidePlace answers a status poll for the user at p (with one join
// shard, p.Seq alone decides) from the node's view of the sale, without
// Redis. now is the node's clock. rnd returns a uniform number in [0, 1)
// that spreads PollAfter by ±20% (see jitter): rand.Float64 when serving,
// a constant in a test that wants one exact answer. It is called once.
//
// A room staff closed (event.Closure) answers Closed to everyone but the
// sold out and the not selected, with the place they keep (Position,
// Ahead; no ETA: the frontier is held) and a poll every MaxPoll: they keep
// their ticket, and once staff reopen the same poll answers as before.
func DecidePlace(s *Sale, p queue.Place, now time.Time, rnd func() float64) Decision {
	c := &s.Config
	if !now.Before(c.EndsAt) {
		return Decision{State: Closed, PollAfter: MaxPoll}
	}
	u := rnd()
	d := decidePlace(s, p, now, u)
	if c.IsClosed() && d.State != SoldOut && d.State != NotSelected {
		return Decision{State: Closed, Position: d.Position, Ahead: d.Ahead, Lane: d.Lane, PollAfter: jitter(MaxPoll, u), ByStaff: true}
	}
	return d
}

// decidePlace is DecidePlace of a room staff have not closed; u jitters
// the poll.
func decidePlace(s *Sale, p queue.Place, now time.Time, u float64) Decision {
	c := &s.Config
	if lane, n := queue.Unlane(p.Seq); lane > 0 {
		return decideLane(s, lane, n, now, u)
	}
	seq, shardWindow := p.Seq, s.Window
	if s.Order != nil {
		shardWindow = s.Order.ShardWindow(p.Shard)
	}
	// Inside the window, nobody has a position until W is frozen.
	inWindow := !s.WindowFrozen || seq <= shardWindow
	if inWindow && (!s.WindowFrozen || s.Window == 0) {
		wait := c.WindowEnd().Sub(now)
		return Decision{State: Prequeue, ETA: max(wait, 0), PollAfter: jitter(clamp(wait, MinPoll, MaxPoll), u)}
	}
	f := int64(math.Floor(s.Frontier))
	pos := seq
	switch {
	case s.Order != nil:
		if pos = s.Order.Position(s.Perm, p); pos == 0 {
			return unsettled(s, f, u)
		}
	case s.Window > 0:
		pos = queue.Position(s.Perm, seq)
	}
	return decideAt(s, pos, f, s.Pace, c.AdmitRatePerSecond*c.DefaultShare(), c.WindowEnd(), now, u)
}

// decideAt answers for position pos of a queue whose frontier is f,
// admitting at most maxRate a second from start at the measured pace p;
// u jitters the poll.
func decideAt(s *Sale, pos, f int64, p Pace, maxRate float64, start, now time.Time, u float64) Decision {
	c := &s.Config
	admitted := pos <= f
	switch {
	case s.SoldOut && c.Mode == event.Lottery && !admitted:
		return Decision{State: NotSelected, Position: pos, PollAfter: MaxPoll}
	case s.SoldOut:
		return Decision{State: SoldOut, Position: pos, PollAfter: MaxPoll}
	case c.Paused, s.HealthHeld && !admitted:
		// A health hold stops admission; who is admitted keeps checking out.
		return Decision{State: Paused, Position: pos, Ahead: max(pos-f-1, 0), PollAfter: jitter(5*time.Second, u)}
	case admitted:
		return Decision{State: Admitted, Position: pos, PollAfter: jitter(MaxPoll, u)}
	}
	ahead := pos - f - 1
	eta := ETA(ahead, p, maxRate)
	if now.Before(start) {
		eta += start.Sub(now)
	}
	return Decision{State: Waiting, Position: pos, Ahead: ahead, ETA: eta, PollAfter: jitter(clamp(eta/4, MinPoll, PollCap(s)), u)}
}

// unsettled answers a later joiner of a queue of join shards whose arrival
// second is not settled on every shard yet (about a second after joining):
// no position yet, and behind everyone settled. The frontier never passes
// the settled, so nobody unsettled is admitted. u jitters the poll.
func unsettled(s *Sale, f int64, u float64) Decision {
	c := &s.Config
	ahead := max(s.Order.Settled()-f, 0)
	switch {
	case s.SoldOut:
		return Decision{State: SoldOut, PollAfter: MaxPoll}
	case c.Paused, s.HealthHeld:
		return Decision{State: Paused, Ahead: ahead, PollAfter: jitter(5*time.Second, u)}
	}
	eta := ETA(ahead, s.Pace, c.AdmitRatePerSecond*c.DefaultShare())
	return Decision{State: Waiting, Ahead: ahead, ETA: eta, PollAfter: jitter(MinPoll, u)}
}

func clamp(d, lo, hi time.Duration) time.Duration { return min(max(d, lo), hi) }

// jitter spreads polls ±20% so a crowd admitted together does not poll in
// lockstep: d × (0.8 + 0.4u) for u in [0, 1), so u = 0.5 leaves d as it is.
func jitter(d time.Duration, u float64) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*u))
}
