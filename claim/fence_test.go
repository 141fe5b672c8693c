package claim

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
)

// saleConfig stores sale as an event of units on sale and lays its stock.
func saleConfig(t *testing.T, e *env, sale Sale, units int64) event.Config {
	t.Helper()
	now := time.Now().UTC()
	cfg := event.Config{ID: sale.ID, Name: sale.ID, Supply: units, PerUserLimit: 1, ClaimTTLSeconds: 3600,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: sale.Buckets}
	cfg.Defaults()
	ctx := context.Background()
	if _, err := event.NewStore(e.rdb).Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Lay(ctx, SaleOf(cfg), cfg.OnSale()); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runWorker runs an order worker on e until the returned stop is called
// (or the test ends).
func runWorker(t *testing.T, e *env) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewWorker(ctx, e.store, e.js, WorkerConfig{OnError: func(err error) { t.Logf("worker: %v", err) }})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// workerCaughtUp polls until the order worker has acknowledged every
// message on the stream.
func workerCaughtUp(t *testing.T, e *env) {
	t.Helper()
	// A bound, not a timing: a fresh worker on an R3 stream of a loaded
	// machine (a stressed CI run) took over 20 s to make its consumer
	// and acknowledge a dozen messages.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	testenv.Eventually(t, "the worker to acknowledge every message", 60*time.Second, func() error {
		st, err := e.js.Stream(ctx, StreamName)
		if err != nil {
			return err
		}
		si, err := st.Info(ctx)
		if err != nil {
			return err
		}
		c, err := st.Consumer(ctx, WorkerConsumer)
		if err != nil {
			return err
		}
		ci, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if ci.AckFloor.Stream < si.State.LastSeq {
			return fmt.Errorf("acknowledged up to %d of %d (%d pending, %d unacknowledged)", ci.AckFloor.Stream, si.State.LastSeq, ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
}

// TestConfirmedSurvivesFailover: the order worker confirms a claim on the
// primary; the confirmation is lost with it. On the promoted replica the
// claim still looks pending, yet it must not be released (the release is
// fenced like a claim), and the rebuild restores it confirmed from the
// worker's order, so its unit is never sold again.
func TestConfirmedSurvivesFailover(t *testing.T) {
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	ns := testenv.StartNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := newEnv(t, primary.Client(t), ns.URL(), 1)
	cfg := saleConfig(t, old, Sale{ID: "confirm", Buckets: 1}, 4)
	res, err := old.svc.Claim(ctx, Request{Event: cfg.ID, User: "u", IdemKey: "k", Limit: 1, Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	promoted := NewStore(replica.Client(t))
	testenv.WaitFor(t, "the replica to hold the claim", 10*time.Second, func() bool {
		_, err := promoted.Lookup(ctx, cfg.ID, res.ClaimID)
		return err == nil
	})
	if err := replica.Client(t).Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, old)
	testenv.WaitFor(t, "the worker to confirm the claim on the old primary", 20*time.Second, func() bool {
		rec, err := old.store.Lookup(ctx, cfg.ID, res.ClaimID)
		return err == nil && rec.Status == "confirmed"
	})
	stop()
	primary.Kill(t)

	e := newEnv(t, replica.Client(t), ns.URL(), 1)
	if rec, err := e.store.Lookup(ctx, cfg.ID, res.ClaimID); err != nil || rec.Status != "pending" {
		t.Fatalf("claim on the promoted replica: %+v %v, want it still pending (the confirm was lost)", rec, err)
	}
	if _, err := e.svc.Release(ctx, cfg.ID, res.ClaimID, "u"); !errors.Is(err, ErrNeedsRebuild) {
		t.Fatalf("release on the promoted replica before the rebuild: %v, want ErrNeedsRebuild", err)
	}
	if _, err := e.store.Confirm(ctx, cfg.ID, res.ClaimID); !errors.Is(err, ErrNeedsRebuild) {
		t.Fatalf("confirm on the promoted replica before the rebuild: %v, want ErrNeedsRebuild", err)
	}
	rep, err := NewRebuilder(e.svc, e.js, event.NewStore(e.rdb)).Rebuild(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Confirmed != 1 || rep.Available != cfg.OnSale()-1 {
		t.Errorf("rebuild %+v, want the claim confirmed and %d units left", rep, cfg.OnSale()-1)
	}
	if rec, err := e.store.Lookup(ctx, cfg.ID, res.ClaimID); err != nil || rec.Status != "confirmed" {
		t.Errorf("claim after the rebuild: %+v %v, want confirmed", rec, err)
	}
	if _, err := e.svc.Release(ctx, cfg.ID, res.ClaimID, "u"); !errors.Is(err, ErrConfirmed) {
		t.Errorf("release after the rebuild: %v, want ErrConfirmed", err)
	}
}

// TestConfirmedOrderOutlivesRelease: a released event for a claim the
// worker confirmed (a release decided on a Redis that lost the
// confirmation) never turns the order into released, and the rebuild
// trusts the confirmed order over the release.
func TestConfirmedOrderOutlivesRelease(t *testing.T) {
	e := singleRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := saleConfig(t, e, Sale{ID: "outlive", Buckets: 1}, 3)
	res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: "u", IdemKey: "k", Limit: 1, Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, e)
	testenv.WaitFor(t, "the worker to confirm", 20*time.Second, func() bool {
		st, err := OrderStatuses(ctx, e.js, cfg.ID)
		return err == nil && st[res.ClaimID] == "confirmed"
	})
	late := encoded(OrderEvent{Type: "released", Event: cfg.ID, ClaimID: res.ClaimID, User: "u", Units: 1, At: time.Now().UTC(), Reason: "user"})
	if err := e.pub.Publish(ctx, Subject(cfg.ID, "released"), late.id, []byte(late.payload)); err != nil {
		t.Fatal(err)
	}
	workerCaughtUp(t, e)
	if st, err := OrderStatuses(ctx, e.js, cfg.ID); err != nil || st[res.ClaimID] != "confirmed" {
		t.Fatalf("order after a late release: %q (%v), want confirmed", st[res.ClaimID], err)
	}
	rep, err := NewRebuilder(e.svc, e.js, event.NewStore(e.rdb)).Rebuild(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Confirmed != 1 || rep.Released != 0 || rep.Available != cfg.OnSale()-1 {
		t.Errorf("rebuild %+v, want 1 confirmed, 0 released, %d available", rep, cfg.OnSale()-1)
	}
	if rec, err := e.store.Lookup(ctx, cfg.ID, res.ClaimID); err != nil || rec.Status != "confirmed" {
		t.Errorf("claim after the rebuild: %+v %v, want confirmed", rec, err)
	}
}

// TestEmptyBucketRefuses: the server of a user's home bucket comes back
// without its data. The bucket has no record of being laid or rebuilt, so
// it refuses (rebuild needed) rather than starting afresh — which would
// let the same idempotency key claim twice — and after the rebuild the key
// returns the first claim.
func TestEmptyBucketRefuses(t *testing.T) {
	e := singleRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := saleConfig(t, e, Sale{ID: "empty", Buckets: 4}, 20)
	req := Request{Event: cfg.ID, User: "u", IdemKey: "k", Limit: 1, Buckets: cfg.Buckets}
	first, err := e.svc.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	e.svc.flush(ctx, func(err error) { t.Fatal(err) })
	// The home bucket's shard loses everything.
	keys, err := e.rdb.Keys(ctx, bucketOf(cfg.ID, HomeBucket("u", cfg.Buckets)).tag+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("home bucket keys: %v %v", keys, err)
	}
	if err := e.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if res, err := e.svc.Claim(ctx, req); !errors.Is(err, ErrNeedsRebuild) {
			t.Fatalf("claim on a bucket that lost its data: %+v %v, want ErrNeedsRebuild", res, err)
		}
	}
	if _, err := e.svc.Release(ctx, cfg.ID, first.ClaimID, "u"); !errors.Is(err, ErrNeedsRebuild) && !errors.Is(err, ErrNotFound) {
		t.Fatalf("release on a bucket that lost its data: %v", err)
	}
	if _, err := NewRebuilder(e.svc, e.js, event.NewStore(e.rdb)).Rebuild(ctx, cfg.ID); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Claim(ctx, req)
	if err != nil || !res.Replay || res.ClaimID != first.ClaimID {
		t.Fatalf("replay after the rebuild: %+v %v, want claim %s", res, err, first.ClaimID)
	}
	granted, _ := e.streamCheck(t, cfg.ID)
	if len(granted) != 1 {
		t.Errorf("%d claims on the stream, want 1", len(granted))
	}
	e.totals(t, SaleOf(cfg), cfg.OnSale())
}

// TestEmptyShardRefusesOnCluster is TestEmptyBucketRefuses on a Redis
// Cluster: one master comes back without its buckets' data. Claims homed
// there refuse (and refills skip its buckets as donors) until the
// rebuild; claims homed elsewhere go on; after the rebuild every replay
// returns its first claim and no key was granted twice.
func TestEmptyShardRefusesOnCluster(t *testing.T) {
	c := testenv.StartRedisCluster(t, 3)
	ns := testenv.StartNATS(t)
	e := newEnv(t, c.Client(t), ns.URL(), 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := saleConfig(t, e, Sale{ID: "shard", Buckets: 6}, 60)
	first := claimEach(ctx, t, e, cfg, 24)
	// Master 0 loses its buckets.
	node := c.Node(0).Client(t)
	wiped := map[int]bool{}
	for b := range cfg.Buckets {
		keys, err := node.Keys(ctx, bucketOf(cfg.ID, b).tag+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) > 0 {
			wiped[b] = true
			if err := node.Del(ctx, keys...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(wiped) == 0 || len(wiped) == cfg.Buckets {
		t.Fatalf("master 0 held buckets %v: want some, not all", wiped)
	}
	refused, served := 0, 0
	for u, id := range first {
		res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: u, IdemKey: "k", Limit: 1, Buckets: cfg.Buckets})
		if wiped[HomeBucket(u, cfg.Buckets)] {
			refused++
			if !errors.Is(err, ErrNeedsRebuild) {
				t.Errorf("replay of %s on a wiped bucket: %+v %v, want ErrNeedsRebuild", u, res, err)
			}
		} else {
			served++
			if err != nil || res.ClaimID != id {
				t.Errorf("replay of %s on an intact bucket: %+v %v, want %s", u, res, err, id)
			}
		}
	}
	if refused == 0 || served == 0 {
		t.Fatalf("%d replays refused, %d served: the test needs both", refused, served)
	}
	if _, err := NewRebuilder(e.svc, e.js, event.NewStore(e.rdb)).Rebuild(ctx, cfg.ID); err != nil {
		t.Fatal(err)
	}
	for u, id := range first {
		res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: u, IdemKey: "k", Limit: 1, Buckets: cfg.Buckets})
		if err != nil || res.ClaimID != id {
			t.Errorf("replay of %s after the rebuild: %+v %v, want %s", u, res, err, id)
		}
	}
	e.svc.flush(ctx, func(err error) { t.Fatal(err) })
	granted, _ := e.streamCheck(t, cfg.ID)
	if len(granted) != len(first) {
		t.Errorf("%d claims on the stream, want %d", len(granted), len(first))
	}
	e.totals(t, SaleOf(cfg), cfg.OnSale())
}
