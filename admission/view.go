package admission

import (
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// JoinTimes are the instants a join to lane (0: the default lane) of the
// node's view s is judged against, bounded to the view's age: the join is
// refused (queue.ErrStaleView) once Redis TIME is event.MaxViewAge past
// the read of s.Config, so a view that a staff save overtook never freezes
// a window at an end, or opens a queue layout, that the store no longer
// has (event.LockMargin keeps every fresher view clear of such a save).
func (s *Sale) JoinTimes(lane int) queue.Times {
	c := &s.Config
	t := queue.Times{Opens: c.PrequeueOpensAt, WindowEnd: c.WindowEnd(), JoinEnd: c.JoinEnd(), Shards: c.JoinShards}
	if lane > 0 && lane <= len(c.Lanes) { // a queue of its own, whose window closes at the lane's start
		t.WindowEnd, t.Lane = c.Lanes[lane-1].Start(c), lane
	}
	if !s.ConfigAt.IsZero() {
		t.Until = s.ConfigAt.Add(event.MaxViewAge)
	}
	return t
}
