package admission

import (
	"math"
	"time"

	"github.com/anteroom/anteroom/queue"
)

// Lanes (event.Lane) generalize the frontier without changing advance.lua:
// each lane is its own queue on the event's hash tag (queue/lanes.go) and
// has its own frontier hash, presence bitmap, history and admission clock,
// advanced by the same script on the lane's keys at Share × admit_rate
// from the lane's start, while the default lane advances at the rest. The
// rates sum to admit_rate, so the total admitted never exceeds it; each
// lane credits its own no-shows. A lane has no max_active cap of its own
// (max_active caps the default lane, counting every pending claim) and no
// lottery (lanes need FCFS). Status stays free: the node's view keeps each
// lane's frontier, window and permutation, and a ticket's sequence number
// names its lane (queue.Laned). StepFor makes each lane's step.

// decideLane answers a status poll for number n of lane (1-based) from
// the node's view, like DecidePlace for the default lane: positions are
// the lane's own, and so is the ETA. u jitters the poll.
func decideLane(s *Sale, lane int, n int64, now time.Time, u float64) Decision {
	c := &s.Config
	if lane > len(s.Lanes) || lane > len(c.Lanes) {
		// A ticket of a lane this view does not have (yet): not admitted.
		return Decision{State: Waiting, Lane: lane, PollAfter: jitter(MinPoll, u)}
	}
	v, start := &s.Lanes[lane-1], c.Lanes[lane-1].Start(c)
	if inWindow := !v.WindowFrozen || n <= v.Window; inWindow && (!v.WindowFrozen || v.Window == 0) {
		wait := start.Sub(now)
		return Decision{State: Prequeue, Lane: lane, ETA: max(wait, 0), PollAfter: jitter(clamp(wait, MinPoll, MaxPoll), u)}
	}
	pos := n
	if v.Window > 0 {
		pos = queue.Position(v.Perm, n)
	}
	d := decideAt(s, pos, int64(math.Floor(v.Frontier)), v.Pace, c.AdmitRatePerSecond*c.Lanes[lane-1].Share, start, now, u)
	d.Lane = lane
	return d
}
