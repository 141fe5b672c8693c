//go:build soak && linux

package soak

import (
	"context"
	"time"

	"github.com/anteroom/anteroom/claim"
)

// audit checks a finished sale against the order stream, the orders
// bucket and Redis: every claim id a client was answered 201/200 for is
// granted on the stream (void grants of superseded epochs left out,
// claim.CountedEvents; late copies counted once, as every reader does);
// units held ≤ supply and no user above the limit on the stream; no
// confirmed order released; every record the sale left decodes
// (readAll); once the worker caught up, an order for every grant.
func (ss *sales) audit(ctx context.Context, ev string) {
	h := ss.h
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		tot, err := claim.NewStore(ss.s.redis()).Totals(ctx, claim.Sale{ID: ev, Buckets: ss.buckets(ev)})
		if err == nil && tot.Outbox == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A NATS server may be down for a fault meanwhile (up to 8 s): the
	// stream is unreadable only if it stays so.
	evs, err := claim.CountedEvents(ctx, ss.s.js, ev)
	for try := 0; err != nil && try < 30; try++ {
		time.Sleep(time.Second)
		evs, err = claim.CountedEvents(ctx, ss.s.js, ev)
	}
	if err != nil {
		h.violateNow(ev, "order stream unreadable for 30 s: %v", err)
		return
	}
	grants, released, users := map[string]int{}, map[string]bool{}, map[string]map[string]bool{}
	// cancels counts each claim's order_cancelled events; restocked are
	// those whose unit went back to the stock (issue 36).
	cancels, restocked := map[string]int{}, map[string]bool{}
	for _, e := range evs {
		switch e.Type {
		case claim.KindCancelled:
			cancels[e.ClaimID]++
			if e.Restock {
				restocked[e.ClaimID] = true
			}
		case "granted":
			grants[e.ClaimID]++
			if users[e.User] == nil {
				users[e.User] = map[string]bool{}
			}
			users[e.User][e.ClaimID] = true
		case "released":
			released[e.ClaimID] = true
		}
	}
	b := h.book(ev)
	h.mu.Lock()
	acked := map[string]string{}
	for id, u := range b.acked {
		acked[id] = u
	}
	h.mu.Unlock()
	ss.checks.Add(int64(len(acked)))
	for id, u := range acked {
		if grants[id] == 0 {
			h.violateNow(ev, "claim %s of %s was answered 201/200 and is not granted on the stream", id, u)
			return
		}
	}
	// The stream holds each event at least once: a node stalled past the
	// duplicate window stores its copy again, and every reader counts
	// claim ids (docs/how-it-works.md, claim/doc.go). The audit counts them too and
	// reports the copies.
	copies := 0
	for _, n := range grants {
		copies += n - 1
	}
	// Held: granted − released − cancelled and returned to the stock (a
	// unit cancelled without restock stays sold, void).
	live := 0
	for id := range grants {
		if !released[id] && !restocked[id] {
			live++
		}
	}
	ss.checks.Add(1)
	supply := h.supply(ev)
	if live > int(supply) {
		h.violateNow(ev, "stream: %d units held (granted − released − cancelled and restocked), supply %d", live, supply)
		return
	}
	if !ss.auditCancels(ev, grants, released, cancels, restocked) || !ss.auditSignals(ev, evs, released, cancels) {
		return
	}
	for u, ids := range users {
		n := 0
		for id := range ids {
			if !released[id] {
				n++
			}
		}
		ss.checks.Add(1)
		if n > saleLimit {
			h.violateNow(ev, "stream: %s holds %d claims, limit %d", u, n, saleLimit)
			return
		}
	}
	if err := ss.readAll(ctx, ev); err != nil {
		h.violateNow(ev, "%v", err)
		return
	}
	// Wait for the worker to confirm what it can, then compare.
	var orders map[string]claim.Status
	caughtUp := false
	for time.Now().Before(deadline) {
		if l, err := claim.OrderLag(ctx, ss.s.js); err == nil && l != nil && l.Pending == 0 && l.AckPending == 0 {
			caughtUp = true
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	orders, err = claim.OrderStatuses(ctx, ss.s.js, ev)
	for try := 0; err != nil && try < 30; try++ {
		time.Sleep(time.Second)
		orders, err = claim.OrderStatuses(ctx, ss.s.js, ev)
	}
	if err != nil {
		h.violateNow(ev, "orders bucket unreadable for 30 s: %v", err)
		return
	}
	for id, st := range orders {
		ss.checks.Add(1)
		if st == claim.StatusConfirmed && released[id] {
			h.violateNow(ev, "order %s confirmed and released on the stream", id)
			return
		}
	}
	if caughtUp {
		// The worker has handled every event: each grant has its order
		// (a worker that cannot decode an event drops it).
		for id := range grants {
			ss.checks.Add(1)
			if _, ok := orders[id]; !ok {
				h.violateNow(ev, "claim %s is granted on the stream and the order worker, caught up, recorded no order for it", id)
				return
			}
		}
	}
	tot, err := claim.NewStore(ss.s.redis()).Totals(ctx, claim.Sale{ID: ev, Buckets: ss.buckets(ev)})
	if err == nil {
		ss.checks.Add(1)
		if held := tot.Granted - tot.Released - tot.Restocked; held > supply || tot.Remaining < 0 {
			h.violateNow(ev, "Redis after the sale: %d held (granted %d − released %d − cancelled and restocked %d), remaining %d, supply %d",
				held, tot.Granted, tot.Released, tot.Restocked, tot.Remaining, supply)
		}
	}
	ss.checkStaffAudit(ctx, ev)
	ss.checkPushes(ev)
	h.note("audit", "sale %s: %d granted on the stream (%d late copies), %d released, %d cancelled (%d restocked), %d held of supply %d, %d acknowledged to clients, %d orders",
		ev, len(grants), copies, len(released), len(cancels), len(restocked), live, supply, len(acked), len(orders))
}
