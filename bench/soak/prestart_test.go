//go:build soak && linux

package soak

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/anteroom/anteroom/internal/wait"
)

// beforeStart plays what staff and faults do to sale ev before it starts,
// by its plan: a failover from a lagging replica with a staff save between
// the promotion and the rebuild, and a staff edit (move the start either
// way, change supply, change the lane's share). Both meet early-lane and
// bypass-pass claims already granted (issue 24, bugs 2, 3, 4 and 9).
func (ss *sales) beforeStart(ctx context.Context, ev string, rnd *rand.Rand) {
	st := ss.state(ev)
	if st == nil {
		return
	}
	if st.plan.stopWorker > 0 && ss.f != nil {
		// At once: the first arrivals' claims must stay pending.
		ss.f.wg.Go(func() { ss.stopWorkerAfterStart(ctx, st) })
	}
	if st.plan.lead == 0 {
		return
	}
	created := st.start.Add(-st.plan.lead)
	at := func(frac float64) time.Time { return created.Add(time.Duration(frac * float64(st.plan.lead))) }
	if st.plan.lagFailover && ss.f != nil {
		// Early-lane members have claimed for a while (the lane started
		// at half the lead); the replica stops copying now.
		from, lag := 0.55, dur(rnd, 1500*time.Millisecond, 3*time.Second)
		if st.plan.lagFrom > 0 {
			from, lag = st.plan.lagFrom, time.Duration((0.75-st.plan.lagFrom)*float64(st.plan.lead))
		}
		if !wait.Sleep(ctx, time.Until(at(from))) {
			return
		}
		if ss.f.take("redis") {
			ss.f.count("redis-failover-lagging")
			err := ss.f.failoverWith(ctx, lag, func() {
				if ss.started(ev, -time.Second) {
					return
				}
				ss.edit(ev, rnd, 2, "between the promotion and the rebuild")
			})
			ss.f.release("redis", "redis-failover-lagging", err)
		}
	}
	if st.plan.edit {
		if !wait.Sleep(ctx, time.Until(at(0.4+0.4*rnd.Float64()))) {
			return
		}
		if !ss.started(ev, -2*time.Second) {
			ss.edit(ev, rnd, -1, "before the start")
		}
	}
}

// stopWorkerAfterStart stops the order worker stopWorkerAt after the
// start for the plan's stopWorker: claims stay pending meanwhile.
func (ss *sales) stopWorkerAfterStart(ctx context.Context, st *saleState) {
	if !wait.Sleep(ctx, time.Until(st.start.Add(st.plan.stopWorkerAt))) || !ss.f.take("worker") {
		return
	}
	ss.f.count("worker-stop")
	ss.h.note("fault", "worker SIGKILLed")
	ss.f.s.stopWorker()
	wait.Sleep(ctx, st.plan.stopWorker)
	ss.h.note("fault", "worker restarted")
	ss.f.release("worker", "worker-stop", ss.f.s.startWorker())
}

// edit is one staff save of sale ev before its start: the start moved
// earlier or later, supply changed, or the lane's share changed. The
// answer may be 200 (saved) or a 4xx/503 that must have changed nothing;
// the soak's books follow what was answered. kind picks the change (0
// earlier, 1 later, 2 supply, 3 lane share), or -1 draws it.
func (ss *sales) edit(ev string, rnd *rand.Rand, kind int, when string) {
	st := ss.state(ev)
	ss.mu.Lock()
	start := st.start
	ss.mu.Unlock()
	change := map[string]any{}
	var newStart time.Time
	var newSupply int64
	k := kind
	if k < 0 {
		k = rnd.IntN(4)
	}
	switch {
	case k == 0 && time.Until(start) > 6*time.Second:
		// Earlier, never before the lane's start nor within 3 s from now.
		earliest := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
		if st.plan.lane {
			earliest = later(earliest, start.Add(-st.plan.earlyBy().Truncate(time.Second)))
		}
		if !earliest.Before(start) {
			return
		}
		newStart = earliest.Add(time.Duration(rnd.Int64N(int64(start.Sub(earliest)))).Truncate(time.Second))
		change["starts_at"] = newStart.UTC()
	case k <= 1:
		newStart = start.Add(time.Duration(2+rnd.IntN(5)) * time.Second)
		change["starts_at"] = newStart.UTC()
	case k == 2 || !st.plan.lane:
		newSupply = int64(saleSupply - 20 + rnd.IntN(41))
		change["supply"] = newSupply
	default:
		change["lanes"] = []map[string]any{{"name": laneName, "share": 0.2 + 0.2*rnd.Float64(), "starts_at": start.Add(-st.plan.earlyBy().Truncate(time.Second)).UTC()}}
	}
	old := ss.h.supply(ev)
	if newSupply > 0 {
		ss.h.setSupply(ev, max(old, newSupply)) // either may hold while the save runs
	}
	body, _ := json.Marshal(change)
	status, raw := ss.s.dp.AdminCall(ss.s.base(rnd.IntN(nodes)), http.MethodPut, "/admin/events/"+ev, body)
	ss.h.note("staff", "edit %s %s: PUT %s → %d %.200s", ev, when, body, status, raw)
	switch {
	case status == http.StatusOK:
		if newSupply > 0 {
			ss.h.setSupply(ev, newSupply)
		}
		if !newStart.IsZero() {
			ss.mu.Lock()
			st.start = newStart
			ss.mu.Unlock()
		}
	case status >= 500 && status != http.StatusServiceUnavailable:
		ss.h.violateNow(ev, "staff save %s answered %d: %s", body, status, raw)
	case status == 0 || strings.Contains(string(raw), `"not_replicated"`):
		// No answer, or saved on a primary whose replica lags (a failover
		// may lose it): either may hold; the higher supply stays.
	default:
		ss.h.setSupply(ev, old)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
