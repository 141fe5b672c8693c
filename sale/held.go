package sale

import (
	"strings"
	"sync"
)

// Late no-shows under max_active (see admission/advance.lua): a position credited as
// a no-show is held — its holder, if they come after all, gets no
// admission token at once (that would put one more person in checkout
// than max_active) but waits until the frontier's step lets them in,
// oldest request first, within the rate and the caps. The step logs every
// position it holds and lets in; each node tails that log on its tick
// into a heldSet, so status still answers without Redis. After a Redis
// failover the node reads the log again from its start.

// heldSet is one node's copy of an event's held positions, its offset in
// the held log and the log's epoch (the server it was read on). Safe for
// concurrent use.
type heldSet struct {
	mu    sync.RWMutex
	next  int64
	epoch int64
	set   map[int64]struct{}
}

// heldOf returns event ev's held set, made on first use.
func (s *Snapshots) heldOf(ev string) *heldSet {
	if h, ok := s.held.Load(ev); ok {
		return h.(*heldSet)
	}
	h, _ := s.held.LoadOrStore(strings.Clone(ev), &heldSet{set: map[int64]struct{}{}})
	return h.(*heldSet)
}

func (h *heldSet) offset() int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.next
}

// apply adds the log's entries read from offset from (q holds position q,
// -q lets it in) to the set; length is the log's length and epoch names
// the server it was read on (admission.Reading.HeldEpoch). A log read on
// another server than the set's (a Redis failover: the promoted server's
// log may differ from the one read past what it copied, and may have grown
// back past the offset) or shorter than the offset (lost) is read again
// from its beginning: the set starts again. Entries read from an offset
// another refresh moved past are already in.
func (h *heldSet) apply(from, epoch, length int64, entries []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.next != from {
		return
	}
	if epoch != h.epoch || length < from {
		h.next, h.epoch, h.set = 0, epoch, map[int64]struct{}{}
		if from > 0 {
			return // the entries read are from another log's offset
		}
	}
	for _, e := range entries {
		if e > 0 {
			h.set[e] = struct{}{}
		} else {
			delete(h.set, -e)
		}
	}
	h.next = from + int64(len(entries))
}

// behind reports whether the set has not yet read a log of length n.
func (h *heldSet) behind(n int64) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.next < n
}

func (h *heldSet) has(pos int64) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	_, ok := h.set[pos]
	return ok
}

// Held reports whether position pos of event ev (default lane) is held:
// admitted once, credited as a no-show under max_active, and not let in
// since. A held position must get no admission token. While the node has
// not yet read the whole held log (for a few ticks after it starts, on a
// long log; admission.Sale.HeldBehind) every position checked for
// no-shows counts as held. Safe for concurrent use; no Redis.
func (s *Snapshots) Held(ev string, pos int64) bool {
	if v, ok := s.Get(ev); ok && v.HeldBehind && pos <= v.Checked {
		return true
	}
	h, ok := s.held.Load(ev)
	return ok && h.(*heldSet).has(pos)
}

// LateShow asks the next step to let held position pos of event ev in (a
// late request, kept in Redis until it is let in, oldest first). Safe for
// concurrent use; no Redis.
func (s *Snapshots) LateShow(ev string, pos int64) {
	s.putBack(&s.late, ev, []int64{pos}, nil)
}
