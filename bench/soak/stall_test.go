//go:build soak && linux

package soak

import (
	"strings"
	"time"
)

// stallAfter is how long the default lane's frontier may stand still
// while nothing holds it: a running sale with units left, people waiting,
// fewer than max_active in checkout and no fault or staff action meanwhile
// moves it at least rate × (1 − the lanes' shares) ≥ 1.2 positions a
// second.
const stallAfter = 6 * time.Second

// stallSlack is the stall check's tolerance on people in checkout: after
// stallAfter with no move, everyone the frontier admitted has polled (at
// most a second apart) or turned a no-show (the grace is 5 s), so the
// clients' count misses nobody the nodes count; 1 for rounding.
const stallSlack = 1

// checkStall checks that the frontier of sale ev (f, as Redis holds it,
// joined the default lane's joiners, remaining its units left) moves
// while nothing holds it. This is the liveness half of max_active: a
// frontier that counts claims instead of people, or a start moved earlier
// that admits nobody until the old start, stands still with room to admit
// (issue 24, bugs 4 and 6).
func (ss *sales) checkStall(ev string, f float64, joined, remaining int64) {
	now := time.Now()
	ss.mu.Lock()
	st := ss.live[ev]
	if ss.stallSale != ev || f != ss.stallF {
		ss.stallSale, ss.stallF, ss.stallMoved = ev, f, now
	}
	since := ss.stallMoved
	ss.mu.Unlock()
	if st == nil || remaining <= 0 || joined-int64(f) < 3 {
		return
	}
	ss.mu.Lock()
	since = later(since, st.start)
	ss.mu.Unlock()
	if now.Sub(since) < stallAfter {
		return
	}
	ss.checks.Add(1)
	// Nothing that may hold the frontier in the last stallAfter (and 5 s
	// before, for the nodes to pick up a change).
	if why := ss.h.disturbed(now.Add(-stallAfter - 5*time.Second)); why != "" {
		return
	}
	// After a promotion the sale holds admission for one admission TTL and
	// the grace from when its script first ran on the new primary
	// (advance.lua's failover fence): admissions lost with the old primary
	// are still valid until then.
	if ss.h.promotedWithin(now.Add(-admissionTTL - saleGrace*time.Second - stallAfter - 5*time.Second)) {
		return
	}
	inCheckout := ss.h.inCheckoutCount(ev, now)
	if inCheckout >= saleActive-stallSlack {
		return
	}
	ss.h.violateNow(ev, "the frontier stood at %.1f for %s after the start with %d joined, %d units left, at most %d people in checkout (max_active %d) and no fault or staff action",
		f, now.Sub(since).Round(100*time.Millisecond), joined, remaining, inCheckout, saleActive)
}

// disturbed returns the first fault or staff action since t that may hold
// the frontier (any but the order worker's and NATS's, which admission
// does not need), or "".
func (h *history) disturbed(t time.Time) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := len(h.ops) - 1; i >= 0 && h.ops[i].At.After(t); i-- {
		o := h.ops[i]
		if o.User != "-" {
			continue
		}
		if strings.Contains(o.Note, "worker") || strings.Contains(o.Note, "NATS") || strings.HasPrefix(o.Note, "sweep ") {
			continue // a sweep reads claims only (a cancellation may return stock: it counts)
		}
		return o.Note
	}
	return ""
}

// inCheckoutCount is an upper bound on the people max_active counts in
// sale ev at now, as the clients know it: default-lane people admitted
// and not finished by the shop, and either admitted within the admission
// TTL (and the grace) or holding a claim; and lane members and pass
// holders holding a claim (their pending claims count too).
func (h *history) inCheckoutCount(ev string, now time.Time) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.sales[ev]
	if b == nil {
		return 0
	}
	n := 0
	for u, at := range b.inCheckout {
		if now.Sub(at) <= admissionTTL+saleGrace*time.Second || len(b.held[u]) > 0 {
			n++
		}
	}
	for u, ids := range b.held {
		if _, counted := b.inCheckout[u]; !counted && len(ids) > 0 && !b.finished[u] {
			n++
		}
	}
	return n
}
