//go:build drills

package drills

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/tokens"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// TestDrill4NodeKill runs two `anteroom serve` processes on one Redis and
// one NATS, a crowd across both, and SIGKILLs one of them mid-sale, in the
// middle of a burst of claims sent to it. The crowd's shoppers on the dead
// node retry with the same keys on the survivor; the burst's shoppers
// never come back (closed tabs), so whatever the dead node left in the
// outboxes must reach the stream through the survivor's sweeper.
func TestDrill4NodeKill(t *testing.T) {
	d := newDrill(t, 4, "node-sigkill",
		"two `anteroom serve` processes on one redis-server and one NATS; at 8 s, 48 admitted shoppers send one claim each to node A at once "+
			"and A is SIGKILLed after its first answers; the crowd (360 shoppers, 500 units, limit 2) retries with the same keys on B; "+
			"the burst's shoppers never retry, so what A left in the outboxes is B's sweeper's to publish")
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	dp := newDeployment(t)
	addrA, addrB := loopback(t), loopback(t)
	a := dp.serve(t, "serve-a", addrA, r.URL(), ns.URL()) // first: it generates the shared signing keys
	dp.serve(t, "serve-b", addrB, r.URL(), ns.URL())
	urlA, urlB := "http://"+addrA, "http://"+addrB
	const ev = "nodekill"
	spec := saleSpec{supply: 500, limit: 2, rate: 12, buckets: 4}
	dp.createSale(t, ev, spec, urlA, urlB)
	rdb := r.Client(t)
	js := testenv.ConnectJS(t, ns.URL())

	const burstSize = 48
	burstTokens := mintTokens(t, dp.Keys, ev, "b", burstSize)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	c := newCrowd(crowdConfig{Event: ev, URLs: []string{urlA, urlB}, Users: 360, Spread: 3 * time.Second, Keys: 3, TwinShare: 0.1,
		Timeouts: []time.Duration{2 * time.Second, 6 * time.Second}})
	start := time.Now()
	crowdDone := c.start(ctx)
	d.phase("crowd started")

	wait.Sleep(ctx, time.Until(start.Add(8*time.Second)))
	atKill := totals(ctx, t, rdb, claim.Sale{ID: ev, Buckets: spec.buckets})
	b := fireBurst(ctx, c, urlA, ev, burstTokens)
	// Kill A once it has answered a few of the burst: the rest are in
	// flight inside it.
	for b.answered.Load() < 4 && time.Since(b.start) < 500*time.Millisecond {
		time.Sleep(time.Millisecond)
	}
	a.Kill()
	killedAt := time.Now()
	answeredBeforeKill := b.answered.Load()
	left := outboxIDs(ctx, t, rdb, claim.Sale{ID: ev, Buckets: spec.buckets})
	d.phase("SIGKILLed node A (%d grants so far; burst: %d of %d answered); %d order events in the outboxes", atKill.Granted, answeredBeforeKill, burstSize, len(left))
	b.wg.Wait()
	wait.Sleep(ctx, time.Second)
	still := outboxIDs(ctx, t, rdb, claim.Sale{ID: ev, Buckets: spec.buckets})
	var orphans []string
	for id := range left {
		if still[id] {
			orphans = append(orphans, id)
		}
	}
	slices.Sort(orphans)
	drained := waitOutboxEmpty(ctx, rdb, claim.Sale{ID: ev, Buckets: spec.buckets}, 30*time.Second)
	d.phase("outboxes empty again after %s", drained.Round(100*time.Millisecond))

	crowdDone()
	elapsed := time.Since(start)
	d.phase("crowd done")
	if ctx.Err() != nil {
		d.check("sale finished in time", false, "the crowd was still running after %s", elapsed.Round(time.Second))
	}
	au := d.audit(ctx, sale{ev: ev, onSale: spec.supply, limit: spec.limit, buckets: spec.buckets, rdb: rdb, js: js}, c)

	onStream := streamGranted(ctx, t, js, ev)
	var missing []string
	for _, id := range orphans {
		if !onStream[id] {
			missing = append(missing, id)
		}
	}
	d.check("the dead node's outbox entries published by the survivor", len(missing) == 0 && drained >= 0,
		"%d entries in the outboxes right after the kill, %d still there 1 s later (left by A); outboxes empty %s after the kill; %d of them missing from the stream%s",
		len(left), len(orphans), fmtDrained(drained), len(missing), sample(missing))

	acks := c.snapshot()
	var beforeA, afterB, movedToB int
	for _, k := range acks {
		switch {
		case k.Node == urlA && k.At.Before(killedAt):
			beforeA++
		case k.Node == urlB && k.At.After(killedAt):
			afterB++
			if n := userIndex(k.User); n >= 0 && n%2 == 0 {
				movedToB++
			}
		}
	}
	d.figure("units", "%d on sale; %d granted (stream), %d remaining in Redis", spec.supply, au.granted, au.redis.Remaining)
	d.figure("kill", "node A SIGKILLed at %d grants; the burst: %d claims sent to A, %d answered (%d granted) before the kill, %d answers in all",
		atKill.Granted, burstSize, answeredBeforeKill, b.granted.Load(), b.answered.Load())
	d.figure("acknowledgements", "%d by A before the kill; %d by B after it, %d of them to shoppers who had started on A", beforeA, afterB, movedToB)
	d.figure("outboxes after the kill", "%d entries right after, %d still 1 s later%s; empty after %s",
		len(left), len(orphans), sample(orphans), fmtDrained(drained))
	d.crowdFigures(c)
	_, _, unreachable, _ := d.refusalCheck(c)
	d.summary = fmt.Sprintf("%s; A killed mid-burst (%d of %d answered), left %d outbox entries, all published by B's sweeper within %s; %d claim attempts found A gone, %d claims of A's shoppers acknowledged by B",
		au.line(spec.supply), answeredBeforeKill, burstSize, len(orphans), fmtDrained(drained), unreachable, movedToB)
}

// burst is a one-shot volley of claims from shoppers who never retry.
type burst struct {
	start             time.Time
	wg                sync.WaitGroup
	answered, granted atomic.Int64
}

// fireBurst sends one claim per token to base at once; grants are recorded
// in c as acknowledged.
func fireBurst(ctx context.Context, c *crowd, base, ev string, toks map[string]string) *burst {
	b := &burst{start: time.Now()}
	for user, tok := range toks {
		b.wg.Go(func() {
			key := user + "-k0"
			var cl client.Claim
			a := c.send(ctx, 5*time.Second, user, base, func(ctx context.Context, shopper *client.Client) (status int, err error) {
				if cl, err = shopper.Claim(ctx, ev, tok, key); cl.Created {
					return http.StatusCreated, err
				}
				return http.StatusOK, err
			})
			c.tally("claim", a)
			if a.err != nil {
				return
			}
			b.answered.Add(1)
			if a.status == http.StatusCreated || a.status == http.StatusOK {
				b.granted.Add(1)
				c.acked(ack{ClaimID: cl.ID, User: user, Key: key, Node: base, Status: a.status, At: time.Now()})
			}
		})
	}
	return b
}

// mintTokens signs admission tokens for n users prefix0…prefix<n-1> with
// the deployment's keys, as a node does for admitted shoppers.
func mintTokens(t *testing.T, keyDir, ev, prefix string, n int) map[string]string {
	t.Helper()
	keys, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	issuer := tokens.NewIssuer(keys, tokens.IssuerConfig{})
	out := make(map[string]string, n)
	for i := range n {
		user := fmt.Sprintf("%s%d", prefix, i)
		tok, _, err := issuer.Issue(ev, user, int64(100000+i), 10*time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		out[user] = tok
	}
	return out
}

// outboxIDs returns the message ids waiting in the sale's outboxes. The
// key names are claim's ("ar:{<event>#<bucket>}:outbox", claim/keys.go).
func outboxIDs(ctx context.Context, t *testing.T, rdb redis.UniversalClient, sale claim.Sale) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for b := range sale.Buckets {
		ids, err := rdb.HKeys(ctx, fmt.Sprintf("ar:{%s#%d}:outbox", sale.ID, b)).Result()
		if err != nil {
			t.Fatalf("outbox: %v", err)
		}
		for _, id := range ids {
			out[id] = true
		}
	}
	return out
}

// waitOutboxEmpty returns how long the sale's outboxes took to empty, or
// −1.
func waitOutboxEmpty(ctx context.Context, rdb redis.UniversalClient, sale claim.Sale, limit time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < limit && ctx.Err() == nil {
		n := 0
		for b := range sale.Buckets {
			n += int(rdb.HLen(ctx, fmt.Sprintf("ar:{%s#%d}:outbox", sale.ID, b)).Val())
		}
		if n == 0 {
			return time.Since(start)
		}
		wait.Sleep(ctx, 100*time.Millisecond)
	}
	return -1
}

func fmtDrained(d time.Duration) string {
	if d < 0 {
		return "never (within 30 s)"
	}
	return d.Round(100 * time.Millisecond).String()
}

// userIndex returns i of a crowd user "s<i>", or −1.
func userIndex(user string) int {
	var i int
	if _, err := fmt.Sscanf(user, "s%d", &i); err != nil {
		return -1
	}
	return i
}

// streamGranted returns the claim ids of the granted order events of ev.
func streamGranted(ctx context.Context, t *testing.T, js jetstream.JetStream, ev string) map[string]bool {
	t.Helper()
	evs, err := claim.ReadEvents(ctx, js, ev, "granted")
	if err != nil {
		t.Fatalf("read the stream: %v", err)
	}
	out := make(map[string]bool, len(evs))
	for _, e := range evs {
		out[e.ClaimID] = true
	}
	return out
}
