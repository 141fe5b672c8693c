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
)

// TestDrill7RedisPartitionRebuild partitions the Redis primary instead of
// killing it: the replica is promoted and a second node, started on it,
// rebuilds the sale from the order stream, while the first node still
// reaches the old primary and keeps granting there for 6 s — on stock the
// rebuild replaced, its claims invisible to the rebuild. The failover
// fence must refuse every one of those grants (503 paused) and the order
// worker must record them void; then the operator stops the old node and
// the crowd finishes the sale on the new one.
func TestDrill7RedisPartitionRebuild(t *testing.T) {
	d := newDrill(t, 7, "redis-partition-rebuild",
		"at 5 s the replica is promoted (`REPLICAOF NO ONE`) while the primary keeps running and node A keeps serving on it (a partition: "+
			"A cannot know); node B starts on the promoted replica and at once runs `POST /admin/events/{id}/rebuild` and `/resume`; "+
			"A keeps granting on the old primary for 6 s more, then is stopped; 360 shoppers buy 500 units (limit 2 each) from A and B; "+
			"NATS is a cluster of 3 (`testenv.StartNATSCluster`) with the order stream on 3 replicas, where each node's fence judges grants from its view of the epoch markers")
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	ns := testenv.StartNATSCluster(t, 3) // the shape operators run: the fence judges from each node's view of the markers
	dp := newDeployment(t)
	addrA, addrB := loopback(t), loopback(t)
	a := dp.startNode(t, "node-a", addrA, node.Config{RedisURL: primary.URL(), NATSURL: ns.URL(), StreamReplicas: 3})
	baseA, baseB := a.URL(), "http://"+addrB
	const ev = "partition"
	spec := saleSpec{supply: 500, limit: 2, rate: 12, buckets: 4}
	dp.createSale(t, ev, spec, baseA)

	ctx, cancel := context.WithTimeout(context.Background(), 110*time.Second)
	defer cancel()
	pc, rc := primary.Client(t), replica.Client(t)
	if err := testenv.WaitSynced(ctx, pc, rc, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	c := newCrowd(crowdConfig{Event: ev, URLs: []string{baseA, baseB}, Users: 360, Spread: 3 * time.Second, Keys: 3, TwinShare: 0.1,
		Think: 4 * time.Second, Timeouts: []time.Duration{2 * time.Second, 6 * time.Second}})
	start := time.Now()
	crowdDone := c.start(ctx)
	d.phase("crowd started")

	wait.Sleep(ctx, time.Until(start.Add(5*time.Second)))
	if err := rc.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatalf("REPLICAOF NO ONE: %v", err)
	}
	atSplit := totals(ctx, t, pc, claim.Sale{ID: ev, Buckets: spec.buckets})
	d.phase("replica promoted; the old primary runs on (granted on it so far %d)", atSplit.Granted)
	b := dp.startNode(t, "node-b", addrB, node.Config{RedisURL: replica.URL(), NATSURL: ns.URL(), StreamReplicas: 3})
	status, raw := dp.AdminCall(baseB, http.MethodPost, "/admin/events/"+ev+"/rebuild", nil)
	if status != http.StatusOK {
		t.Fatalf("rebuild: %d %s", status, raw)
	}
	rebuiltAt := time.Now()
	var rep claim.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("rebuild report %s: %v", raw, err)
	}
	d.phase("rebuilt on the promoted replica: %s", raw)
	if status, raw := dp.AdminCall(baseB, http.MethodPost, "/admin/events/"+ev+"/resume", nil); status != http.StatusOK {
		t.Fatalf("resume: %d %s", status, raw)
	}
	afterRebuild := totals(ctx, t, pc, claim.Sale{ID: ev, Buckets: spec.buckets})

	wait.Sleep(ctx, 6*time.Second)
	onOld := totals(ctx, t, pc, claim.Sale{ID: ev, Buckets: spec.buckets})
	ackedA := 0
	for _, x := range c.snapshot() {
		if x.Node == baseA && x.Status == http.StatusCreated && x.At.After(rebuiltAt) {
			ackedA++
		}
	}
	if err := a.stop(); err != nil {
		d.note("Closing node A answered: %v.", err)
	}
	stoppedAt := time.Now()
	d.phase("node A stopped: the old primary granted %d claims after the rebuild", onOld.Granted-afterRebuild.Granted)
	crowdDone()
	d.phase("crowd done")
	if ctx.Err() != nil {
		d.check("sale finished in time", false, "the crowd was still running after %s", time.Since(start).Round(time.Second))
	}

	au := d.audit(ctx, sale{ev: ev, onSale: spec.supply, limit: spec.limit, buckets: spec.buckets, rdb: b.Redis(), js: b.JS}, c)
	all, err := claim.ReadEvents(ctx, b.JS, ev)
	if err != nil {
		t.Fatal(err)
	}
	counted, err := claim.CountedEvents(ctx, b.JS, ev)
	if err != nil {
		t.Fatal(err)
	}
	isCounted := map[string]bool{}
	for _, e := range counted {
		if e.Type == "granted" {
			isCounted[e.ClaimID] = true
		}
	}
	void := map[string]bool{}
	for _, e := range all {
		if e.Type == "granted" && !isCounted[e.ClaimID] {
			void[e.ClaimID] = true
		}
	}
	voidAcked := 0
	for _, x := range c.snapshot() {
		if void[x.ClaimID] {
			voidAcked++
		}
	}
	superseded := onOld.Granted - afterRebuild.Granted
	d.check("the old primary really granted after the rebuild", superseded > 0,
		"%d grants on the superseded primary after the rebuild, %d of them on the stream as void", superseded, len(void))
	d.check("no superseded grant acknowledged", voidAcked == 0 && ackedA == 0,
		"%d void grants answered 201/200; node A answered %d claims 201 after the rebuild", voidAcked, ackedA)
	// The order worker, run over the whole stream once the sale is over.
	w, err := claim.NewWorker(ctx, claim.NewStore(b.Redis()), b.JS, claim.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.Run(wctx) }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		lag, err := claim.OrderLag(ctx, b.JS)
		if err == nil && lag != nil && lag.Pending == 0 && lag.AckPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			d.check("order worker caught up", false, "lag %+v (%v) after 30 s", lag, err)
			break
		}
		wait.Sleep(ctx, 100*time.Millisecond)
	}
	stopWorker()
	<-workerDone
	statuses, err := claim.OrderStatuses(ctx, b.JS, ev)
	if err != nil {
		t.Fatal(err)
	}
	recordedVoid, other := 0, 0
	for id := range void {
		switch s, ok := statuses[id]; {
		case ok && s == "void":
			recordedVoid++
		case ok:
			other++
		}
	}
	d.check("worker records them void", other == 0 && recordedVoid == len(void),
		"%d of %d void grants recorded as void orders, %d with another status", recordedVoid, len(void), other)
	d.check("rebuild counted the stream", rep.Oversold == 0 && int64(rep.Granted)-int64(rep.Released)+rep.Available == rep.OnSale,
		"report: %d granted, %d released, %d available of %d on sale, oversold %d, epoch marker at %d",
		rep.Granted, rep.Released, rep.Available, rep.OnSale, rep.Oversold, rep.Epoch)
	d.figure("units", "%d on sale; %d granted over the whole sale (stream, void excluded), %d remaining in Redis", spec.supply, au.granted, au.redis.Remaining)
	d.figure("partition", "old primary at the split: %d grants; at the rebuild: %d; when node A stopped (%.1f s after the rebuild): %d; "+
		"void grants on the stream: %d", atSplit.Granted, afterRebuild.Granted, stoppedAt.Sub(rebuiltAt).Seconds(), onOld.Granted, len(void))
	d.figure("rebuild", "from the stream: %d granted, %d released, %d superseded; %d outbox entries published, %d republished; after: remaining %d; %.2f s",
		rep.Granted, rep.Released, rep.Superseded, rep.Published, rep.Republished, rep.After.Remaining, rep.Seconds)
	if inFlight := len(void) - int(superseded); inFlight > 0 {
		d.note("%d of the void grants were decided on the old primary before the rebuild but stored after its epoch marker "+
			"(published late); the rebuild did not count them, so they were refused like the later ones.", inFlight)
	}
	d.crowdFigures(c)
	honest, _, _, dishonest := d.refusalCheck(c)
	d.summary = fmt.Sprintf("%s; the old primary granted %d claims after the rebuild, %d void on the stream, %d acknowledged; "+
		"%d claims refused 503/429, %d other 5xx", au.line(spec.supply), superseded, len(void), voidAcked, honest, dishonest)
}
