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
}

// orders reads the event's order events (duplicates counted once by claim
// id) and the order worker's records.
func (b *Builder) orders(ctx context.Context, ev string) (orderTotals, error) {
	out := orderTotals{granted: map[string]bool{}, released: map[string]bool{}, buyers: map[string]bool{}}
	evs, err := claim.ReadEvents(ctx, b.JS, ev)
	if err != nil {
		return out, fmt.Errorf("report %s: %w", ev, err)
	}
	for _, e := range evs {
		switch e.Type {
		case "granted":
			if !out.granted[e.ClaimID] {
				out.granted[e.ClaimID] = true
				out.buyers[e.User] = true
				out.unitsGranted += max(e.Units, 1)
			}
		case "released":
			if !out.released[e.ClaimID] {
				out.released[e.ClaimID] = true
				out.unitsReleased += max(e.Units, 1)
			}
		}
	}
	st, err := claim.OrderStatuses(ctx, b.JS, ev)
	if err != nil {
		return out, fmt.Errorf("report %s: %w", ev, err)
	}
	for _, s := range st {
		if s == "confirmed" {
			out.confirmed++
		}
	}
	return out, nil
}
