//go:build drills

package drills

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/internal/wait"
)

// TestDrill1RedisPause slows Redis down mid-sale with CLIENT PAUSE: twice
// for 4 s (ALL, then WRITE: the claim script writes, so both stop claims),
// longer than the node's 3 s bound on a request's Redis calls and the
// clients' 2 s timeout, then once for 1.5 s. Clients see 503s and
// timeouts and retry with the same Idempotency-Key.
func TestDrill1RedisPause(t *testing.T) {
	d := newDrill(t, 1, "redis-pause",
		"`CLIENT PAUSE 4000 ALL`, `CLIENT PAUSE 4000 WRITE` and `CLIENT PAUSE 1500 ALL` on the only redis-server, 7 s apart, "+
			"while 360 shoppers buy 500 units (limit 2 each) from one node; half the clients time out after 2 s, half after 6 s "+
			"(beyond the node's 3 s bound, so they see its answer), and all retry with the same Idempotency-Key")
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	dp := newDeployment(t)
	n := dp.startNode(t, "node", loopback(t), node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	const ev = "pause"
	spec := saleSpec{supply: 500, limit: 2, rate: 12, buckets: 4}
	dp.createSale(t, ev, spec, n.URL())

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	c := newCrowd(crowdConfig{Event: ev, URLs: []string{n.URL()}, Users: 360, Spread: 3 * time.Second, Keys: 3, TwinShare: 0.1,
		Timeouts: []time.Duration{2 * time.Second, 6 * time.Second}})
	start := time.Now()
	crowdDone := c.start(ctx)
	d.phase("crowd started")

	store := claim.NewStore(n.Redis())
	rc := r.Client(t)
	pauses := []struct {
		at   time.Duration
		ms   int
		mode string
	}{{5 * time.Second, 4000, "ALL"}, {12 * time.Second, 4000, "WRITE"}, {19 * time.Second, 1500, "ALL"}}
	var during []string
	var honestSum, timeoutSum int
	for i, p := range pauses {
		if !wait.Sleep(ctx, time.Until(start.Add(p.at))) {
			t.Fatal("the drill ran out of time before the pauses")
		}
		tot, err := store.Totals(ctx, claim.Sale{ID: ev, Buckets: spec.buckets})
		if err != nil {
			t.Fatal(err)
		}
		before := c.claimOutcomes()
		if err := rc.Do(ctx, "CLIENT", "PAUSE", strconv.Itoa(p.ms), p.mode).Err(); err != nil {
			t.Fatalf("CLIENT PAUSE: %v", err)
		}
		d.phase("CLIENT PAUSE %d %s (granted so far %d of %d)", p.ms, p.mode, tot.Granted, spec.supply)
		// Answers to requests sent during the pause arrive up to the
		// node's 3 s bound (or the client's 2 s timeout) after it.
		wait.Sleep(ctx, time.Duration(p.ms)*time.Millisecond+3500*time.Millisecond)
		diff := subtract(c.claimOutcomes(), before)
		honest, timeouts, _, _ := refusals(diff)
		honestSum, timeoutSum = honestSum+honest, timeoutSum+timeouts
		during = append(during, fmt.Sprintf("pause %d (%d ms %s, at %d granted): %s", i+1, p.ms, p.mode, tot.Granted, outcomesLine(diff)))
	}
	crowdDone()
	elapsed := time.Since(start)
	d.phase("crowd done")
	if ctx.Err() != nil {
		d.check("sale finished in time", false, "the crowd was still running after %s", elapsed.Round(time.Second))
	}

	a := d.audit(ctx, sale{ev: ev, onSale: spec.supply, limit: spec.limit, buckets: spec.buckets, rdb: n.Redis(), js: n.JS}, c)
	honest, timeouts, unreachable, dishonest := d.refusalCheck(c)
	d.figure("units", "%d on sale; %d granted (stream), %d remaining in Redis", spec.supply, a.granted, a.redis.Remaining)
	d.crowdFigures(c)
	d.figure("claim answers during each pause and the 3.5 s after it", "%s", strings.Join(during, "; "))
	d.figure("claims refused honestly", "%d in all (%d around the pauses), %d client timeouts (%d around the pauses), %d unreachable",
		honest, honestSum, timeouts, timeoutSum, unreachable)
	d.summary = fmt.Sprintf("%s; %d claims refused 503 with Retry-After, %d client timeouts, %d other 5xx",
		a.line(spec.supply), honest, timeouts, dishonest)
}

// subtract returns m − base per key, dropping zeros.
func subtract(m, base map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range m {
		if d := n - base[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}
