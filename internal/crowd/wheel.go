package crowd

import (
	"sync"
	"time"
)

// wheel schedules people's next polls in slots of tick: adding and taking
// due ids cost O(1) each however many people wait, which a million
// sleeping goroutines (8 GB of stacks) or a heap of timers would not.
type wheel struct {
	mu    sync.Mutex
	tick  time.Duration
	start time.Time
	next  int64 // the next slot to fire, counted in ticks since start
	slots [][]uint32
}

// newWheel returns a wheel of tick slots covering span; a poll asked for
// further ahead is kept at the far end of the span.
func newWheel(start time.Time, tick, span time.Duration) *wheel {
	return &wheel{tick: tick, start: start, slots: make([][]uint32, int(span/tick)+1)}
}

// add schedules id at t: in the first slot that starts at or after t (so
// it never comes due early), in the next slot if t has passed, at the end
// of the span if t lies beyond it.
func (w *wheel) add(t time.Time, id uint32) {
	at := int64((t.Sub(w.start) + w.tick - 1) / w.tick)
	w.mu.Lock()
	at = min(max(at, w.next), w.next+int64(len(w.slots))-1)
	i := at % int64(len(w.slots))
	w.slots[i] = append(w.slots[i], id)
	w.mu.Unlock()
}

// due appends to out the ids of every slot up to now and empties them.
func (w *wheel) due(now time.Time, out []uint32) []uint32 {
	upto := int64(now.Sub(w.start) / w.tick)
	w.mu.Lock()
	defer w.mu.Unlock()
	for ; w.next <= upto; w.next++ {
		i := w.next % int64(len(w.slots))
		out = append(out, w.slots[i]...)
		w.slots[i] = w.slots[i][:0]
	}
	return out
}
