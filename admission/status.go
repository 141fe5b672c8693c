package admission

import (
	"math"
	"math/rand/v2"
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
}

// Poll limits: the front polls every MinPoll, the far back every MaxPoll.
const (
	MinPoll = time.Second
	MaxPoll = 30 * time.Second
)

// Decide answers a status poll for sequence number seq from the node's view
// of the sale, without Redis. now is the node's clock.
func Decide(s *Sale, seq int64, now time.Time) Decision {
	c := &s.Config
	if !now.Before(c.EndsAt) {
		return Decision{State: Closed, PollAfter: MaxPoll}
	}
	// Inside the window, nobody has a position until W is frozen.
	inWindow := !s.WindowFrozen || seq <= s.Window
	if inWindow && (!s.WindowFrozen || s.Window == 0) {
		wait := c.WindowEnd().Sub(now)
		return Decision{State: Prequeue, ETA: max(wait, 0), PollAfter: jitter(clamp(wait, MinPoll, MaxPoll))}
	}
	pos := seq
	if s.Window > 0 {
		pos = queue.Position(s.Perm, seq)
	}
	f := int64(math.Floor(s.Frontier))
	admitted := pos <= f
	switch {
	case s.SoldOut && c.Mode == event.Lottery && !admitted:
		return Decision{State: NotSelected, Position: pos, PollAfter: MaxPoll}
	case s.SoldOut:
		return Decision{State: SoldOut, Position: pos, PollAfter: MaxPoll}
	case c.Paused:
		return Decision{State: Paused, Position: pos, Ahead: max(pos-f-1, 0), PollAfter: jitter(5 * time.Second)}
	case admitted:
		return Decision{State: Admitted, Position: pos, PollAfter: jitter(MaxPoll)}
	}
	ahead := pos - f - 1
	rate := s.Rate
	if rate <= 0 {
		rate = c.AdmitRatePerSecond
	}
	eta := time.Duration(float64(ahead+1) / rate * float64(time.Second))
	if start := c.WindowEnd(); now.Before(start) {
		eta += start.Sub(now)
	}
	return Decision{State: Waiting, Position: pos, Ahead: ahead, ETA: eta, PollAfter: jitter(clamp(eta/4, MinPoll, MaxPoll))}
}

func clamp(d, lo, hi time.Duration) time.Duration { return min(max(d, lo), hi) }

// jitter spreads polls ±20% so a crowd admitted together does not poll in
// lockstep.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
