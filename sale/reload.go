package sale

import (
	"context"
	"strings"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
)

// Reload reads event id's configuration and stock now and republishes the
// node's view of it with them, so that status, claims and the staff
// console see a save, a pause or a rebuild at once. It does not step the
// frontier: the view keeps the last tick's reading (F, the window, the
// no-shows), and only the tick (Run, Refresh) steps it. A sale the node
// has no view of yet gets one with an empty reading until its first tick.
// A view a tick published from a configuration read later is kept. Safe
// for concurrent use with the tick.
func (s *Snapshots) Reload(ctx context.Context, id string) error {
	id = strings.Clone(id) // kept as a map key
	cfg, seen, err := s.configs.GetAt(ctx, id)
	if err != nil {
		return err
	}
	live, err := s.stock.Live(ctx, claim.SaleOf(cfg), false)
	if err != nil {
		return err
	}
	now := s.now()
	for {
		old := s.view.Load()
		cur := (*old)[id]
		if cur != nil && cur.ConfigAt.After(seen) {
			return nil
		}
		next := make(map[string]*admission.Sale, len(*old)+1)
		for k, v := range *old {
			next[k] = v
		}
		next[id] = reloaded(cur, cfg, seen, live, now)
		if s.view.CompareAndSwap(old, &next) {
			return nil
		}
	}
}

// reloaded is cur (nil: no view yet, taken at the node's time now) with
// configuration cfg, read at Redis TIME seen, and the stock live: the
// stock, the sold-out judgement and the lanes' rates follow
// admission.StepFor; the reading, and when it was taken (Refreshed), are
// cur's.
func reloaded(cur *admission.Sale, cfg event.Config, seen time.Time, live claim.Live, now time.Time) *admission.Sale {
	left := leftOf(live.Stock)
	plan := admission.StepFor(&cfg, stockOf(left, live, cur), nil, 0, time.Time{})
	v := &admission.Sale{Rate: plan.Step.Rate, Refreshed: now}
	if cur != nil {
		c := *cur // Refreshed stays the reading's
		v = &c
	}
	v.Config, v.ConfigAt, v.Remaining, v.BucketStock, v.SoldOut = cfg, seen, left, live.Stock, plan.SoldOut
	if len(v.Lanes) > 0 {
		lanes := make([]admission.LaneView, len(v.Lanes))
		copy(lanes, v.Lanes)
		for i := range lanes {
			if i < len(plan.Lanes) {
				lanes[i].Rate = plan.Lanes[i].Rate
			}
		}
		v.Lanes = lanes
	}
	return v
}
