package admission

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/queue"
)

//go:embed enter.lua
var enterLua string

// ErrFull is Enter's answer to the gate (AdmitOnly) when it cannot admit at
// once: people are waiting, max_active people are active, the rate is
// spent or the room is paused.
var ErrFull = errors.New("admission: the room cannot admit at once")

// Entrance is one safety-net join (or gate check).
type Entrance struct {
	// User is the caller; "" for the gate, which keeps no queue entry.
	User string
	// Opens is when the room was switched on (starts_at); Ends is ends_at.
	Opens, Ends time.Time
	// Rate caps admissions per second, the instant ones included.
	Rate float64
	// MaxActive is the threshold of active people (at least 1).
	MaxActive int64
	// AdmissionTTL is how long an admission lasts: the admitted person is
	// active that long (longer when it is renewed).
	AdmissionTTL time.Duration
	// NoShowGrace is the room's no-show grace (the frontier's Step.Grace).
	NoShowGrace time.Duration
	// Paused queues everyone.
	Paused bool
	// AdmitOnly (the gate) admits at once or returns ErrFull, never queues.
	AdmitOnly bool
	// Lists are the door's exact list checks of this entrance (package
	// door's Verdict.Exact at door.Room): copies in the room's slot
	// (lists.CopyKey(queue.LaneTag(ev, 0), …)) and the caller's keyed
	// hash, decided inside Enter's one script call. The zero value checks
	// none.
	Lists queue.Lists
}

// Entered is the outcome of Enter.
type Entered struct {
	queue.Entry
	// Admitted is true when the entry is admitted: at once (Existing
	// false) or earlier and still active (Existing true).
	Admitted bool
	// Active is how many people were active after this step.
	Active int64
}

// Enter runs a safety-net room's join in one Redis step (enter.lua): while
// nobody waits, fewer than MaxActive people are active and the rate
// allows, the caller is admitted at once (marked present and active until
// AdmissionTTL, so the caller issues the admission token itself);
// otherwise the caller is queued first come first served and admitted by
// the frontier as others leave. A user with an entry still waiting or
// still active gets it back; one whose admission expired gets a new
// entry. It returns queue.ErrNotOpen before Opens, queue.ErrClosed from
// Ends, and ErrFull for AdmitOnly when it cannot admit. No position is
// given twice across a Redis failover: Enter reports the highest position
// the room's counter gave this node, and the counter keeps the queue's
// failover fence (see package queue, "What a Redis failover does").
//
// With e.Lists, a caller on one of its block lists is refused with
// queue.ErrBlocked and one on none of its eligibility lists with
// queue.ErrNotEligible, in the same script call, before anything is read
// or written (an entry they hold included); lists whose copies are
// outside the room's slot, or a hash that is not 8 bytes, fail before
// Redis is called.
func (f *Frontier) Enter(ctx context.Context, ev string, e Entrance) (Entered, error) {
	k := queue.KeysFor(ev)
	userKey := queue.UserKey(ev, "")
	if e.User != "" {
		userKey = queue.UserKey(ev, e.User)
	}
	keys := []string{frontierKey(ev), k.Seq, k.Window, presentKey(ev), activeKey(ev), userKey, bucketKey(ev), k.Fence}
	args := []any{e.User, e.Opens.UnixMilli(), e.Ends.UnixMilli(), e.Rate,
		max(e.MaxActive, 1), e.AdmissionTTL.Milliseconds(), bit(e.Paused), bit(e.AdmitOnly), e.NoShowGrace.Milliseconds(),
		f.highs.High(k.Seq), queue.FailoverSpan.Milliseconds()}
	if l := &e.Lists; len(l.Block)+len(l.Eligible) > 0 {
		if err := l.Check(queue.LaneTag(ev, 0)); err != nil {
			return Entered{}, fmt.Errorf("enter %s: %w", ev, err)
		}
		keys = append(append(keys, l.Block...), l.Eligible...)
		args = append(args, len(l.Block), len(l.Eligible), l.Hash)
	}
	res, err := f.enter.Run(ctx, f.rdb, keys, args...).Int64Slice()
	if err != nil {
		return Entered{}, fmt.Errorf("enter %s: %w", ev, err)
	}
	if len(res) != 4 {
		return Entered{}, fmt.Errorf("enter %s: unexpected reply %v", ev, res)
	}
	out := Entered{Entry: queue.Entry{Seq: res[1], JoinedAt: time.Unix(res[2], 0)}, Active: res[3]}
	if res[0] == 0 || res[0] == 1 || res[0] == 4 || res[0] == 5 {
		f.highs.See(k.Seq, res[1])
	}
	switch res[0] {
	case 0:
		out.Admitted = true
	case 1:
	case 2:
		return Entered{}, queue.ErrNotOpen
	case 3:
		return Entered{}, queue.ErrClosed
	case 4:
		out.Existing = true
	case 5:
		out.Existing, out.Admitted = true, true
	case 6:
		return Entered{Active: res[3]}, ErrFull
	case 7:
		return Entered{}, queue.ErrBlocked
	case 8:
		return Entered{}, queue.ErrNotEligible
	default:
		return Entered{}, fmt.Errorf("enter %s: unexpected reply %v", ev, res)
	}
	return out, nil
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

func bucketKey(ev string) string { return "ar:{" + ev + "}:snet" }
