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

// TestFailoverRebuild is the Redis failover drill: a replica follows the
// primary through part of a sale, is promoted (REPLICAOF NO ONE), and the
// primary takes more claims and releases — which the new primary never
// sees — before it dies. The nodes move to the promoted replica, the event
// is paused and rebuilt from the stream, and the sale goes on to the end:
// units granted − released never exceed the units on sale, every user's
// limit holds, replays return the claims the old primary granted, and
// claims during the rebuild are refused as paused.
func TestFailoverRebuild(t *testing.T) {
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	ns := testenv.StartNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	old := newEnv(t, primary.Client(t), ns.URL(), 1)
	now := time.Now().UTC()
	cfg := event.Config{ID: "drill", Name: "drill", Supply: 120, ReserveUnits: 20, PerUserLimit: 2,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), ClaimTTLSeconds: 3600, Buckets: 3}
	cfg.Defaults()
	if _, err := event.NewStore(old.rdb).Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := old.store.Lay(ctx, SaleOf(cfg), cfg.OnSale()); err != nil {
		t.Fatal(err)
	}
	claim := func(e *env, user, key string) (Result, error) {
		return e.svc.Claim(ctx, Request{Event: cfg.ID, User: user, IdemKey: key, Limit: cfg.PerUserLimit, Buckets: cfg.Buckets})
	}
	mustClaim := func(e *env, user, key string) string {
		t.Helper()
		res, err := claim(e, user, key)
		if err != nil {
			t.Fatalf("claim %s/%s: %v", user, key, err)
		}
		return res.ClaimID
	}

	// Phase 1, replicated: 30 claims, 2 releases, and one grant whose
	// node died before publishing it (it waits in the outbox).
	var phase1 []string
	for i := range 30 {
		phase1 = append(phase1, mustClaim(old, fmt.Sprint("p", i), "a"))
	}
	for _, id := range phase1[:2] {
		if _, err := old.svc.Release(ctx, cfg.ID, id, ""); err != nil {
			t.Fatal(err)
		}
	}
	dead := NewService(old.store, &dyingPublisher{real: old.pub})
	dead.pub.(*dyingPublisher).dead.Store(true)
	if _, err := dead.Claim(ctx, Request{Event: cfg.ID, User: "orphan", IdemKey: "a", Limit: 2, Buckets: cfg.Buckets}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("claim on a dead publisher: %v", err)
	}
	promoted := NewStore(replica.Client(t))
	testenv.WaitFor(t, "the replica to catch up", 10*time.Second, func() bool {
		got, err := promoted.Totals(ctx, SaleOf(cfg))
		return err == nil && got.Granted == 31 && got.Released == 2
	})
	if err := replica.Client(t).Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}

	// Phase 2, on the old primary only: 20 users claim twice, p5 a second
	// time, and one claim is released. Then the primary dies.
	replays := map[string]string{}
	for i := range 20 {
		u := fmt.Sprint("q", i)
		replays[u] = mustClaim(old, u, "a")
		mustClaim(old, u, "b")
	}
	mustClaim(old, "p5", "b")
	if _, err := old.svc.Release(ctx, cfg.ID, phase1[10], "p10"); err != nil {
		t.Fatal(err)
	}
	primary.Kill(t)

	// The nodes move to the promoted replica. It lacks 41 grants and 1 release.
	e := newEnv(t, replica.Client(t), ns.URL(), 1)
	configs := event.NewStore(e.rdb)
	before := e.totals(t, SaleOf(cfg), cfg.OnSale())
	// The fence: the promoted replica's stock is stale, and no claim may be
	// decided on it before the rebuild — whatever the nodes' view says.
	for _, u := range []string{"late1", "q0", "p5"} {
		if _, err := claim(e, u, "late"); !errors.Is(err, ErrNeedsRebuild) {
			t.Fatalf("claim of %s on the promoted replica before the rebuild: %v, want ErrNeedsRebuild", u, err)
		}
	}
	rb := NewRebuilder(e.svc, e.js, configs)
	// A claim while the buckets are frozen is refused.
	token, err := rb.freeze(ctx, SaleOf(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := claim(e, "q0", "c"); !errors.Is(err, ErrPaused) {
		t.Fatalf("claim on frozen buckets: %v, want ErrPaused", err)
	}
	if _, err := rb.Rebuild(ctx, cfg.ID); !errors.Is(err, ErrRebuildRunning) {
		t.Fatalf("rebuild during another: %v, want ErrRebuildRunning", err)
	}
	if err := rb.unfreeze(ctx, SaleOf(cfg), token); err != nil {
		t.Fatal(err)
	}
	if cur, err := configs.Get(ctx, cfg.ID); err != nil {
		t.Fatal(err)
	} else if cur.Paused {
		cur.Paused = false
		if _, err := configs.Put(ctx, cur); err != nil {
			t.Fatal(err)
		}
	}

	rep, err := rb.Rebuild(ctx, cfg.ID)
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	t.Logf("before %+v; rebuild %+v", before, rep)
	const granted, released = 30 + 1 + 41, 3
	// Published counts the orphan and the entries whose removal from the
	// outbox had not reached the replica (republished harmlessly).
	if rep.Granted != granted || rep.Released != released || rep.Published < 1 || rep.Available != cfg.OnSale()-granted+released {
		t.Errorf("rebuild report %+v, want %d granted, %d released, the orphan published", rep, granted, released)
	}
	after := e.totals(t, SaleOf(cfg), cfg.OnSale())
	if after.Remaining != cfg.OnSale()-granted+released || after.Parked != 0 {
		t.Errorf("after the rebuild %+v, want %d remaining", after, cfg.OnSale()-granted+released)
	}
	if c, err := configs.Get(ctx, cfg.ID); err != nil || c.Paused {
		t.Errorf("event paused=%v (%v) after the rebuild, want resumed", c.Paused, err)
	}
	// What the old primary alone knew holds again.
	for u, id := range replays {
		if res, err := claim(e, u, "a"); err != nil || !res.Replay || res.ClaimID != id {
			t.Fatalf("replay of %s: %+v %v, want claim %s", u, res, err, id)
		}
		if _, err := claim(e, u, "c"); !errors.Is(err, ErrLimitReached) {
			t.Fatalf("third claim of %s: %v, want the limit", u, err)
		}
	}
	if rec, err := e.store.Lookup(ctx, cfg.ID, phase1[10]); err != nil || rec.Status != "released" {
		t.Errorf("claim released on the old primary: %+v %v", rec, err)
	}
	mustClaim(e, "p10", "again") // p10's release gave their slot back

	// The sale goes on to the end.
	e.run(t, SaleOf(cfg))
	for i := 0; ; i++ {
		if _, err := claim(e, fmt.Sprint("r", i), "a"); errors.Is(err, ErrSoldOut) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	e.drained(t, SaleOf(cfg))
	onStream, rel := e.streamCheck(t, cfg.ID)
	if live := int64(len(onStream) - len(rel)); live != cfg.OnSale() {
		t.Errorf("granted − released over the whole sale = %d, want %d (never more)", live, cfg.OnSale())
	}
	held := map[string]int{}
	orphan := false
	for id, oe := range onStream {
		orphan = orphan || oe.User == "orphan"
		if !rel[id] {
			held[oe.User]++
		}
	}
	for u, n := range held {
		if n > int(cfg.PerUserLimit) {
			t.Errorf("user %s holds %d claims, limit %d", u, n, cfg.PerUserLimit)
		}
	}
	if !orphan {
		t.Error("the grant left in the outbox by a dead node never reached the stream")
	}
	e.totals(t, SaleOf(cfg), cfg.OnSale())
}
