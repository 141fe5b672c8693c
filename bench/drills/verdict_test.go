//go:build drills

package drills

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// check is one line of a verdict.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// drill collects one drill's figures and checks and reports its verdict.
type drill struct {
	t       *testing.T
	order   int
	name    string
	fault   string
	start   time.Time
	summary string
	figures [][2]string
	checks  []check
	notes   []string
}

// newDrill starts drill number order; its verdict is reported when the test
// ends, also when it stops early.
func newDrill(t *testing.T, order int, name, fault string) *drill {
	d := &drill{t: t, order: order, name: name, fault: fault, start: time.Now()}
	t.Cleanup(d.finish)
	return d
}

func (d *drill) figure(name, format string, a ...any) {
	d.figures = append(d.figures, [2]string{name, fmt.Sprintf(format, a...)})
	d.t.Logf("%s: %s", name, fmt.Sprintf(format, a...))
}

func (d *drill) check(name string, ok bool, format string, a ...any) {
	c := check{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...)}
	d.checks = append(d.checks, c)
	if !ok {
		d.t.Errorf("FAIL %s: %s", name, c.Detail)
	}
}

func (d *drill) note(format string, a ...any) { d.notes = append(d.notes, fmt.Sprintf(format, a...)) }

// phase logs the drill's progress with the time since it started.
func (d *drill) phase(format string, a ...any) {
	d.t.Logf("[%5.1fs] %s", time.Since(d.start).Seconds(), fmt.Sprintf(format, a...))
}

// finish prints DRILL <name>: PASS|FAIL and appends the row.
func (d *drill) finish() {
	if d.t.Failed() && !slices.ContainsFunc(d.checks, func(c check) bool { return !c.OK }) {
		d.checks = append(d.checks, check{Name: "drill ran to the end", Detail: "stopped early: see the test log"})
	}
	verdict := "PASS"
	if len(d.checks) == 0 || slices.ContainsFunc(d.checks, func(c check) bool { return !c.OK }) {
		verdict = "FAIL"
	}
	var fig strings.Builder
	for _, f := range d.figures {
		fmt.Fprintf(&fig, "\n    %s: %s", f[0], f[1])
	}
	for _, c := range d.checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(&fig, "\n    [%s] %s: %s", mark, c.Name, c.Detail)
	}
	secs := time.Since(d.start).Seconds()
	fmt.Printf("DRILL %s: %s (%.0f s) %s%s\n", d.name, verdict, secs, d.summary, fig.String())
	if verdict == "FAIL" && !d.t.Failed() {
		d.t.Error("drill verdict: FAIL")
	}
	if results == nil {
		return
	}
	err := results.append(row{
		Order: d.order, Drill: d.name, Fault: d.fault, Verdict: verdict, Summary: d.summary,
		Figures: d.figures, Checks: d.checks, Notes: d.notes, Started: d.start.UTC(), Seconds: secs,
		Machine: machine(), Command: command(),
	})
	if err != nil {
		d.t.Errorf("record the drill's row: %v", err)
	}
}

// sale is what an audit reads: the event, its rules, and where its state
// lives.
type sale struct {
	ev      string
	onSale  int64
	limit   int64
	buckets int
	rdb     redis.UniversalClient
	js      jetstream.JetStream
}

// audit is the invariants' account after a drill.
type audit struct {
	live, granted, released int // distinct claims on the stream
	msgs                    int // granted order events on the stream, duplicates included
	redis                   claim.Totals
	acked                   int // distinct claim ids clients were answered 201/200 for
	lost                    int // of them, missing from the stream
	oversold                int64
}

// line summarises the audit for the table.
func (a audit) line(onSale int64) string {
	return fmt.Sprintf("%d/%d units granted, %d oversold; %d acknowledged claims, %d lost", a.live, onSale, a.oversold, a.acked, a.lost)
}

// audit waits for the outboxes to drain, then checks the invariants
// against the order stream, Redis and what the clients were told.
func (d *drill) audit(ctx context.Context, s sale, c *crowd) audit {
	var a audit
	var tot claim.Totals
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		tot, err = claim.NewStore(s.rdb).Totals(ctx, claim.Sale{ID: s.ev, Buckets: s.buckets})
		if (err == nil && tot.Outbox == 0) || time.Now().After(deadline) {
			break
		}
		wait.Sleep(ctx, 200*time.Millisecond)
	}
	if err != nil {
		d.check("Redis readable", false, "%v", err)
		return a
	}
	d.check("outboxes drained", tot.Outbox == 0, "%d order events left in outboxes", tot.Outbox)
	a.redis = tot
	// Grants the failover fence voided (stored after a rebuild's epoch
	// marker ended their epoch) were never acknowledged and are not sold.
	evs, err := claim.CountedEvents(ctx, s.js, s.ev)
	if err != nil {
		d.check("stream readable", false, "%v", err)
		return a
	}
	granted, released := map[string]claim.OrderEvent{}, map[string]bool{}
	for _, e := range evs {
		switch e.Type {
		case "granted":
			a.msgs++
			granted[e.ClaimID] = e
		case "released":
			released[e.ClaimID] = true
		}
	}
	a.granted, a.released = len(granted), len(released)
	a.live = a.granted - a.released

	d.check("no oversell (stream)", int64(a.live) <= s.onSale,
		"distinct granted %d − released %d = %d held, units on sale %d", a.granted, a.released, a.live, s.onSale)
	held := tot.Granted - tot.Released
	a.oversold = max(int64(a.live)-s.onSale, held-s.onSale, 0)
	d.check("no oversell (Redis)", held <= s.onSale && tot.Remaining >= 0 && tot.Remaining+tot.Parked+held == s.onSale,
		"granted %d − released %d = %d held; remaining %d + parked %d + held = %d, units on sale %d",
		tot.Granted, tot.Released, held, tot.Remaining, tot.Parked, tot.Remaining+tot.Parked+held, s.onSale)
	d.check("Redis agrees with the stream", tot.Granted == int64(a.granted) && tot.Released == int64(a.released),
		"Redis granted %d released %d; stream %d and %d (%d granted events with duplicates)",
		tot.Granted, tot.Released, a.granted, a.released, a.msgs)

	acks := c.snapshot()
	ackedIDs := map[string]ack{}
	for _, k := range acks {
		ackedIDs[k.ClaimID] = k
	}
	a.acked = len(ackedIDs)
	var lost []string
	for id := range ackedIDs {
		if _, ok := granted[id]; !ok {
			lost = append(lost, id)
		}
	}
	slices.Sort(lost)
	a.lost = len(lost)
	d.check("no acknowledged claim lost", len(lost) == 0 && a.acked > 0,
		"%d claim ids answered 201/200 (%d answers), %d missing from the stream%s", a.acked, len(acks), len(lost), sample(lost))

	c.mu.Lock()
	mismatch, keys := c.mismatch, len(c.byKey)
	c.mu.Unlock()
	d.check("idempotency", mismatch == 0, "%d Idempotency-Keys answered, %d answered with two different claim ids", keys, mismatch)

	d.limits(ctx, s, granted, released, ackedIDs)
	return a
}

// limits checks the per-user limit on the stream, in Redis, and in what
// the clients were told; and that Redis holds every acknowledged claim.
func (d *drill) limits(ctx context.Context, s sale, granted map[string]claim.OrderEvent, released map[string]bool, acked map[string]ack) {
	stream := map[string]int{}
	for id, e := range granted {
		if !released[id] {
			stream[e.User]++
		}
	}
	told := map[string]int{}
	for _, k := range acked {
		told[k.User]++
	}
	users := map[string]bool{}
	for u := range stream {
		users[u] = true
	}
	for u := range told {
		users[u] = true
	}
	store := claim.NewStore(s.rdb)
	inRedis := map[string]int{}
	seen := map[string]bool{}
	var over []string
	var maxHeld int
	for u := range users {
		recs, err := store.Mine(ctx, claim.Sale{ID: s.ev, Buckets: s.buckets}, u)
		if err != nil {
			d.check("Redis readable", false, "claims of %s: %v", u, err)
			return
		}
		for _, r := range recs {
			seen[r.ID] = true
			if r.Status != "released" {
				inRedis[u]++
			}
		}
		n := max(stream[u], told[u], inRedis[u])
		maxHeld = max(maxHeld, n)
		if int64(n) > s.limit {
			over = append(over, fmt.Sprintf("%s (stream %d, Redis %d, told %d)", u, stream[u], inRedis[u], told[u]))
		}
	}
	slices.Sort(over)
	d.check("per-user limit", len(over) == 0,
		"%d users hold claims, at most %d each (limit %d) on the stream, in Redis and as told; %d over%s",
		len(users), maxHeld, s.limit, len(over), sample(over))
	var missing []string
	for id := range acked {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	d.check("acknowledged claims in Redis", len(missing) == 0,
		"%d of %d acknowledged claims have no record in Redis%s", len(missing), len(acked), sample(missing))
}

// sample shows the first few items of a list that should be empty.
func sample(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return ": " + strings.Join(s[:min(len(s), 5)], ", ")
}

// crowdFigures records what the crowd saw.
func (d *drill) crowdFigures(c *crowd) {
	c.mu.Lock()
	elapsed := c.ended.Sub(c.began)
	c.mu.Unlock()
	d.figure("shoppers", "%d users, %d joined, %d admitted, %d told sold out, %d reached the limit, %d gave up; %s",
		c.users.Load(), c.joined.Load(), c.admitted.Load(), c.soldOut.Load(), c.limited.Load(), c.gaveUp.Load(), elapsed.Round(100*time.Millisecond))
	d.figure("claim answers", "%s", outcomesLine(c.claimOutcomes()))
	c.mu.Lock()
	errs := slices.Clone(c.firstErrs)
	c.mu.Unlock()
	if len(errs) > 0 {
		d.figure("first client errors", "%s", strings.Join(errs, "; "))
	}
}

// refusalCheck checks that every claim the node could not decide was
// refused honestly — 503 or 429 with Retry-After, so the client retries
// with the same key — never with another 5xx, and records the tally.
func (d *drill) refusalCheck(c *crowd) (honest, timeouts, unreachable, dishonest int) {
	honest, timeouts, unreachable, dishonest = refusals(c.claimOutcomes())
	d.check("refusals honest", dishonest == 0,
		"%d claim answers 503/429 with Retry-After, %d client timeouts, %d unreachable node, %d other 5xx", honest, timeouts, unreachable, dishonest)
	return
}
