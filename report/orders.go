package report

import (
	"context"
	"fmt"

	"github.com/anteroom/anteroom/claim"
)

// orderTotals is what the order stream and the worker's records say of an
// event's claims.
type orderTotals struct {
	granted, released           map[string]bool // claim ids
	buyers                      map[string]bool // users granted a claim
	unitsGranted, unitsReleased int64
	confirmed                   int64
	// cancelled counts claims staff cancelled by reason; restocked
	// those whose unit went back to the stock.
	cancelled map[string]map[string]bool // reason → claim ids
	restocked map[string]bool
	// lanes splits the granted claims by the lane of their position
	// (laneOf), created as claims arrive.
	lanes map[int]*laneOrders
}

// laneOrders is what the order stream says of one lane's claims.
type laneOrders struct {
	buyers           map[string]bool
	units, confirmed int64
}

// lane returns the totals of lane i, creating them.
func (o *orderTotals) lane(i int) *laneOrders {
	lo := o.lanes[i]
	if lo == nil {
		lo = &laneOrders{buyers: map[string]bool{}}
		o.lanes[i] = lo
	}
	return lo
}

// orders reads the event's order events (duplicates counted once by claim
// id) and the order worker's records.
func (b *Builder) orders(ctx context.Context, ev string) (orderTotals, error) {
	out := orderTotals{granted: map[string]bool{}, released: map[string]bool{}, buyers: map[string]bool{}, lanes: map[int]*laneOrders{},
		cancelled: map[string]map[string]bool{}, restocked: map[string]bool{}}
	seenCancel := map[string]bool{}
	evs, err := claim.ReadEvents(ctx, b.JS, ev)
	if err != nil {
		return out, fmt.Errorf("report %s: %w", ev, err)
	}
	laneOfClaim := map[string]int{}
	for _, e := range evs {
		switch e.Type {
		case "granted":
			if !out.granted[e.ClaimID] {
				out.granted[e.ClaimID] = true
				out.buyers[e.User] = true
				out.unitsGranted += max(e.Units, 1)
				laneOfClaim[e.ClaimID] = laneOf(e.Pos)
				lo := out.lane(laneOf(e.Pos))
				lo.buyers[e.User] = true
				lo.units += max(e.Units, 1)
			}
		case "released":
			if !out.released[e.ClaimID] {
				out.released[e.ClaimID] = true
				out.unitsReleased += max(e.Units, 1)
			}
		case claim.KindCancelled:
			if !seenCancel[e.ClaimID] {
				seenCancel[e.ClaimID] = true
				r := string(e.Reason)
				if out.cancelled[r] == nil {
					out.cancelled[r] = map[string]bool{}
				}
				out.cancelled[r][e.ClaimID] = true
				if e.Restock {
					out.restocked[e.ClaimID] = true
				}
			}
		}
	}
	st, err := claim.OrderStatuses(ctx, b.JS, ev)
	if err != nil {
		return out, fmt.Errorf("report %s: %w", ev, err)
	}
	for id, s := range st {
		if s == "confirmed" {
			out.confirmed++
			if i, ok := laneOfClaim[id]; ok {
				out.lane(i).confirmed++
			}
		}
	}
	return out, nil
}
