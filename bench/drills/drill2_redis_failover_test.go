//go:build drills

package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/redis/go-redis/v9"
)

// TestDrill2RedisFailover kills the Redis primary mid-sale and promotes a
// replica that lags behind: CLIENT PAUSE WRITE on the replica stops it
// applying the replication stream (it keeps reading it), so every write of
// the last seconds before the primary's SIGKILL never reaches it. The
// replica is promoted (REPLICAOF NO ONE), the node is restarted on it with
// the same address, and the operator at once pauses the sale, rebuilds it
// from the order stream (POST /admin/events/{id}/rebuild) and resumes it;
// the crowd goes on retrying with the same keys and the sale runs to the
// end.
func TestDrill2RedisFailover(t *testing.T) {
	failover(t, newDrill(t, 2, "redis-failover",
		"replica stops applying replication (`CLIENT PAUSE 300000 WRITE` on it) at 5 s; primary SIGKILLed at 12 s; "+
			"3 s later the replica is promoted (`REPLICAOF NO ONE`, `CLIENT UNPAUSE`) and the node restarted on it with the same address; "+
			"at once `POST /admin/events/{id}/pause`, `/rebuild`, `/resume`; 360 shoppers buy 500 units (limit 2 each, up to 4 s between "+
			"their claims) throughout"), 0)
}

// TestDrill6RedisFailoverLateRebuild is drill 2 with the rebuild 6 s
// after the node came back on the promoted replica, as happens when nodes
// follow a promotion by themselves (a Redis Cluster failover: the cluster
// client moves to the new master at once) and a person must notice it and
// run the rebuild. Meanwhile claims run on the replica's stale stock,
// per-user claim sets and idempotency keys.
func TestDrill6RedisFailoverLateRebuild(t *testing.T) {
	failover(t, newDrill(t, 6, "redis-failover-late-rebuild",
		"drill 2, but the node restarted on the promoted replica serves claims for 6 s before the operator's "+
			"`POST /admin/events/{id}/rebuild` (which pauses the sale itself) and `/resume`, as when nodes follow a "+
			"Redis Cluster failover by themselves"), 6*time.Second)
}

// failover runs drills 2 and 6: the rebuild comes late after the node is
// back on the promoted replica; with late 0 the sale is paused first.
func failover(t *testing.T, d *drill, late time.Duration) {
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	ns := testenv.StartNATS(t)
	dp := newDeployment(t)
	addr := loopback(t)
	a := dp.startNode(t, "node-a", addr, node.Config{RedisURL: primary.URL(), NATSURL: ns.URL()})
	base := a.URL()
	const ev = "failover"
	spec := saleSpec{supply: 500, limit: 2, rate: 12, buckets: 4}
	dp.createSale(t, ev, spec, base)

	ctx, cancel := context.WithTimeout(context.Background(), 110*time.Second)
	defer cancel()
	pc, rc := primary.Client(t), replica.Client(t)
	if err := testenv.WaitSynced(ctx, pc, rc, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	c := newCrowd(crowdConfig{Event: ev, URLs: []string{base}, Users: 360, Spread: 3 * time.Second, Keys: 3, TwinShare: 0.1, Think: 4 * time.Second,
		Timeouts: []time.Duration{2 * time.Second, 6 * time.Second}})
	start := time.Now()
	crowdDone := c.start(ctx)
	d.phase("crowd started")

	wait.Sleep(ctx, time.Until(start.Add(5*time.Second)))
	atPause := totals(ctx, t, pc, claim.Sale{ID: ev, Buckets: spec.buckets})
	if err := rc.Do(ctx, "CLIENT", "PAUSE", "300000", "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE on the replica: %v", err)
	}
	d.phase("replica paused (granted so far %d)", atPause.Granted)

	wait.Sleep(ctx, time.Until(start.Add(12*time.Second)))
	atKill := totals(ctx, t, pc, claim.Sale{ID: ev, Buckets: spec.buckets})
	ackedAtKill := len(c.snapshot())
	primaryOffset := testenv.ReplicationField(ctx, pc, "master_repl_offset")
	replicaOffset := testenv.ReplicationField(ctx, rc, "slave_repl_offset")
	primary.Kill(t)
	killedAt := time.Now()
	d.phase("primary killed (granted on it %d, %d claims acknowledged)", atKill.Granted, ackedAtKill)

	// The operator needs a moment to notice; meanwhile the node runs on a
	// dead Redis and the crowd keeps retrying.
	beforeDown := c.claimOutcomes()
	wait.Sleep(ctx, detection)
	down := subtract(c.claimOutcomes(), beforeDown)
	if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatalf("REPLICAOF NO ONE: %v", err)
	}
	if err := rc.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatalf("CLIENT UNPAUSE: %v", err)
	}
	promoted := totals(ctx, t, rc, claim.Sale{ID: ev, Buckets: spec.buckets})
	d.phase("replica promoted: it holds %d grants of the %d the primary made", promoted.Granted, atKill.Granted)

	if err := a.stop(); err != nil {
		d.note("Closing the node whose Redis died answered: %v.", err)
	}
	d.phase("node on the dead primary closed")
	b := dp.startNode(t, "node-b", addr, node.Config{RedisURL: replica.URL(), NATSURL: ns.URL()})
	restartedAt := time.Now()
	d.phase("node restarted on the promoted replica")
	ackedBefore := len(c.snapshot())
	if late > 0 {
		wait.Sleep(ctx, late)
	} else if status, raw := dp.AdminCall(base, http.MethodPost, "/admin/events/"+ev+"/pause", nil); status != http.StatusOK {
		t.Fatalf("pause: %d %s", status, raw)
	}
	pausedAt := time.Now()
	slipped := ackedSince(c, restartedAt, pausedAt)
	status, raw := dp.AdminCall(base, http.MethodPost, "/admin/events/"+ev+"/rebuild", nil)
	if status != http.StatusOK {
		t.Fatalf("rebuild: %d %s", status, raw)
	}
	var rep claim.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("rebuild report %s: %v", raw, err)
	}
	d.phase("rebuilt: %s", raw)
	if status, raw := dp.AdminCall(base, http.MethodPost, "/admin/events/"+ev+"/resume", nil); status != http.StatusOK {
		t.Fatalf("resume: %d %s", status, raw)
	}
	resumedAt := time.Now()
	d.phase("resumed")
	crowdDone()
	elapsed := time.Since(start)
	d.phase("crowd done")
	if ctx.Err() != nil {
		d.check("sale finished in time", false, "the crowd was still running after %s", elapsed.Round(time.Second))
	}

	au := d.audit(ctx, sale{ev: ev, onSale: spec.supply, limit: spec.limit, buckets: spec.buckets, rdb: b.Redis(), js: b.JS}, c)
	missed := atKill.Granted - promoted.Granted
	d.check("the replica really lagged", missed > 0,
		"the promoted replica lacked %d of the %d grants the primary had made (replication offset %s of %s)",
		missed, atKill.Granted, replicaOffset, primaryOffset)
	d.check("rebuild counted the stream", rep.Oversold == 0 && int64(rep.Granted)-int64(rep.Released)+rep.Available == rep.OnSale,
		"report: %d granted, %d released, %d available of %d on sale, oversold %d", rep.Granted, rep.Released, rep.Available, rep.OnSale, rep.Oversold)
	d.figure("units", "%d on sale; %d granted over the whole sale (stream), %d remaining in Redis", spec.supply, au.granted, au.redis.Remaining)
	d.figure("lag", "replica paused at %d grants; primary killed at %d grants and %d acknowledged claims; the promoted replica held %d grants, %d held units (%d released), replication offset %s of %s",
		atPause.Granted, atKill.Granted, ackedAtKill, promoted.Granted, promoted.Granted-promoted.Released, promoted.Released, replicaOffset, primaryOffset)
	d.figure("rebuild", "before: granted %d, remaining %d; from the stream: %d granted, %d released, %d confirmed; %d outbox entries published, %d republished; after: remaining %d; %.2f s",
		rep.Before.Granted, rep.Before.Remaining, rep.Granted, rep.Released, rep.Confirmed, rep.Published, rep.Republished, rep.After.Remaining, rep.Seconds)
	d.figure("answers while Redis was down", "%s", outcomesLine(down))
	d.figure("outage", "primary killed → node serving again %.1f s; → pause or rebuild %.1f s; → resumed %.1f s; claims granted on the stale replica before the pause or rebuild: %d (%d acknowledged before the restart)",
		restartedAt.Sub(killedAt).Seconds(), pausedAt.Sub(killedAt).Seconds(), resumedAt.Sub(killedAt).Seconds(), slipped, ackedBefore)
	d.crowdFigures(c)
	honest, _, _, dishonest := d.refusalCheck(c)
	if late > 0 {
		d.note("Why: a node on the promoted replica would claim against its stale state until the rebuild — stock that misses the lost " +
			"grants (an oversell once the sale nears its end), per-user claim sets and idempotency keys that miss the lost claims. " +
			"The failover fence stops it: every bucket records the replication id of the server it was laid or rebuilt on, so on the " +
			"promoted replica claims, releases and confirmations answer 503 paused until the rebuild. A late rebuild costs refusals, " +
			"not units.")
	}
	d.summary = fmt.Sprintf("%s; the promoted replica lacked %d of %d grants; %d claims granted on it before the pause or rebuild; "+
		"rebuild from the stream: %d granted, %d available, %d oversold; %d claims refused 503/429, %d other 5xx",
		au.line(spec.supply), missed, atKill.Granted, slipped, rep.Granted, rep.Available, rep.Oversold, honest, dishonest)
}

// detection is how long the operator takes to notice the dead primary.
const detection = 3 * time.Second

// totals reads the sale's Redis totals through c.
func totals(ctx context.Context, t *testing.T, c redis.UniversalClient, sale claim.Sale) claim.Totals {
	t.Helper()
	tot, err := claim.NewStore(c).Totals(ctx, sale)
	if err != nil {
		t.Fatalf("totals: %v", err)
	}
	return tot
}

// ackedSince counts the claims first acknowledged (201) between from and to.
func ackedSince(c *crowd, from, to time.Time) int {
	n := 0
	for _, a := range c.snapshot() {
		if a.Status == http.StatusCreated && !a.At.Before(from) && !a.At.After(to) {
			n++
		}
	}
	return n
}
