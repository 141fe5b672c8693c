package sale

import (
	"context"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// step is one tick of event id: it reads the configuration, the stock and
// the join-shard order, takes admission.StepFor's plan, flushes the node's
// marks into the default lane's and every lane's frontier step, and
// returns the new view. prev is the current view (nil: none yet). Marks of
// a step that fails are put back for the next tick.
func (s *Snapshots) step(ctx context.Context, id string, prev *admission.Sale) (*admission.Sale, error) {
	cfg, seen, err := s.configs.GetAt(ctx, id)
	if err != nil {
		return nil, err
	}
	until := seen.Add(event.MaxViewAge)
	live, err := s.stock.Live(ctx, claim.SaleOf(cfg), cfg.MaxActive > 0)
	if err != nil {
		return nil, err
	}
	var order *queue.Order
	if cfg.JoinShards > 1 {
		var po *queue.Order
		if prev != nil {
			po = prev.Order
		}
		if order, err = s.frontier.ReadOrder(ctx, id, &cfg, until, po); err != nil {
			return nil, err
		}
	}
	left := leftOf(live.Stock)
	plan := admission.StepFor(&cfg, stockOf(left, live, prev), order, time.Duration(s.credit.Load()), until)
	step := plan.Step
	sessions := s.takeSessions(id)
	if err := s.frontier.RecordSessions(ctx, id, sessions, step.AdmissionTTL); err != nil {
		s.putBackSessions(id, sessions)
		return nil, err
	}
	var sent time.Time
	if s.clock != nil {
		sent = s.clock.Local()
	}
	step.Present, step.PresentWait = s.take(&s.present, id)
	step.Claimed, step.ClaimedWait = s.take(&s.claimed, id)
	held := s.heldOf(id)
	step.HeldFrom = held.offset()
	step.Late, _ = s.take(&s.late, id)
	r, err := s.frontier.Advance(ctx, id, step)
	if err == nil && s.clock != nil {
		s.clock.Observe(sent, s.clock.Local(), r.ServerTime)
	}
	if err != nil {
		s.putBack(&s.present, id, step.Present, step.PresentWait)
		s.putBack(&s.claimed, id, step.Claimed, step.ClaimedWait)
		s.putBack(&s.late, id, step.Late, nil)
		return nil, err
	}
	held.apply(step.HeldFrom, r.HeldEpoch, r.HeldLen, r.HeldLog)
	r.HeldLog = nil // applied; the view need not keep it
	heldBehind := held.behind(r.HeldLen)
	lanes, err := s.stepLanes(ctx, &cfg, plan.Lanes, plan.SoldOut, prev)
	if err != nil {
		return nil, err
	}
	if err := s.flushETAs(ctx, id); err != nil {
		return nil, err // the frontier stepped; the view of the next tick takes it
	}
	now := s.now()
	sale := &admission.Sale{Config: cfg, ConfigAt: seen, Reading: r, Remaining: left, BucketStock: live.Stock, SoldOut: plan.SoldOut, Refreshed: now, Rate: step.Rate, Order: order, Lanes: lanes, HeldBehind: heldBehind}
	if order != nil {
		sale.Joined = order.Joined()
	}
	if prev != nil {
		sale.Perm = prev.Perm
		sale.Rate = measuredRate(prev, r, &cfg)
		sale.Pace = admission.Measure(prev.Pace, prev.Reading, r, waiting(r, &cfg, plan.SoldOut))
	}
	sale.TrackStale(prev)
	if r.WindowFrozen && r.Window > 0 && sale.Perm.Size() != r.Window {
		seed, err := queue.ParseSeedHex(cfg.Seed)
		if err != nil {
			return nil, fmt.Errorf("event %s: seed: %w", id, err)
		}
		if sale.Perm, err = queue.NewPermutation(seed, r.Window); err != nil {
			return nil, fmt.Errorf("event %s: %w", id, err)
		}
	}
	return sale, nil
}

// leftOf is the stock left over every bucket.
func leftOf(perBucket []int64) int64 {
	var left int64
	for _, n := range perBucket {
		left += n
	}
	return left
}

// stockOf is what StepFor needs of the stock read live, left units left;
// prev is the view before (nil: none).
func stockOf(left int64, live claim.Live, prev *admission.Sale) admission.Stock {
	st := admission.Stock{Left: left, Known: live.Known, WasSoldOut: prev != nil && prev.SoldOut, Released: live.Released}
	if len(live.Pending) > 0 {
		st.Pending = make([]admission.Holder, len(live.Pending))
		for i, h := range live.Pending {
			st.Pending[i] = admission.Holder{Pos: h.Pos, User: h.User}
		}
	}
	return st
}

// measuredRate is the default lane's admission rate as the view shows it:
// prev's, moved a fifth of the way to the rate since prev's reading while
// people are still waiting and admission is not held.
func measuredRate(prev *admission.Sale, r admission.Reading, cfg *event.Config) float64 {
	rate := prev.Rate
	if dt := r.ServerTime.Sub(prev.ServerTime).Seconds(); dt > 0 && r.Frontier >= prev.Frontier && prev.Config.Version > 0 {
		inst := (r.Frontier - prev.Frontier) / dt
		if r.Frontier < float64(r.Joined) && !heldBy(r, cfg) {
			// Only a queue with people still waiting measures the rate.
			rate = 0.8*prev.Rate + 0.2*inst
		}
	}
	return rate
}

// waiting is true when reading r of a queue of sale cfg measures its rate:
// people are still waiting and admission is not held.
func waiting(r admission.Reading, cfg *event.Config, soldOut bool) bool {
	return r.Frontier < float64(r.Joined) && !heldBy(r, cfg) && !soldOut
}

// heldBy reports whether admission was held at reading r of sale cfg —
// paused, closed by staff (event.Closure) or held for the shop's health —
// so that the frontier standing still measures no rate: the rate and pace
// of before are kept through the hold.
func heldBy(r admission.Reading, cfg *event.Config) bool {
	return cfg.Paused || cfg.IsClosed() || r.HealthHeld
}

// stepLanes takes the steps of every lane of cfg (StepFor's, after the
// default lane's) with the lanes' marks and returns their views.
func (s *Snapshots) stepLanes(ctx context.Context, cfg *event.Config, steps []admission.Step, soldOut bool, prev *admission.Sale) ([]admission.LaneView, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	out := make([]admission.LaneView, len(steps))
	for i, step := range steps {
		l, lane := &cfg.Lanes[i], step.Lane
		marks := laneMarks(cfg.ID, lane)
		step.Present, step.PresentWait = s.take(&s.present, marks)
		step.Claimed, step.ClaimedWait = s.take(&s.claimed, marks)
		r, err := s.frontier.Advance(ctx, cfg.ID, step)
		if err != nil {
			s.putBack(&s.present, marks, step.Present, step.PresentWait)
			s.putBack(&s.claimed, marks, step.Claimed, step.ClaimedWait)
			return nil, err
		}
		v := admission.LaneView{Reading: r, Rate: step.Rate}
		if prev != nil && i < len(prev.Lanes) {
			pl := &prev.Lanes[i]
			v.Perm = pl.Perm
			v.Pace = admission.Measure(pl.Pace, pl.Reading, r, waiting(r, cfg, soldOut))
		}
		if r.WindowFrozen && r.Window > 0 && v.Perm.Size() != r.Window {
			seed, err := queue.ParseSeedHex(cfg.Seed)
			if err != nil {
				return nil, fmt.Errorf("event %s: seed: %w", cfg.ID, err)
			}
			if cfg.LaneSeeds { // the lane's own draw (an event of before: the event's seed)
				seed = queue.LaneSeed(seed, lane)
			}
			if v.Perm, err = queue.NewPermutation(seed, r.Window); err != nil {
				return nil, fmt.Errorf("event %s lane %s: %w", cfg.ID, l.Name, err)
			}
		}
		out[i] = v
	}
	return out, nil
}
