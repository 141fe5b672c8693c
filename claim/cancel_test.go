package claim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// onRedisAndCluster runs f on a redis-server and on a Redis Cluster of
// three masters, each with a NATS server of its own.
func onRedisAndCluster(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	for name, start := range map[string]func(t *testing.T) redis.UniversalClient{
		"redis-server":  func(t *testing.T) redis.UniversalClient { return testenv.StartRedis(t).Client(t) },
		"redis-cluster": func(t *testing.T) redis.UniversalClient { return testenv.StartRedisCluster(t, 3).Client(t) },
	} {
		t.Run(name, func(t *testing.T) {
			f(t, newEnv(t, start(t), testenv.StartNATS(t).URL(), 1))
		})
	}
}

// cancelSale stores and lays a sale of units over buckets and grants one
// claim to each of users users, returning the config and the claim ids.
func cancelSale(t *testing.T, e *env, id string, units int64, buckets, users int) (event.Config, *event.Store, []string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	cfg := event.Config{ID: id, Name: id, Supply: units, PerUserLimit: 1,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: buckets}
	cfg.Defaults()
	configs := event.NewStore(e.rdb)
	if _, err := configs.Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Lay(ctx, SaleOf(cfg), cfg.OnSale()); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, users)
	for i := range users {
		res, err := e.svc.Claim(ctx, Request{Event: id, User: fmt.Sprint("u", i), IdemKey: "k", Limit: 1, Buckets: buckets})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = res.ClaimID
	}
	return cfg, configs, ids
}

// cancelEvents returns the order_cancelled events on the stream by claim
// id, failing on a claim cancelled twice.
func cancelEvents(t *testing.T, e *env, ev string) map[string]OrderEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := ReadEvents(ctx, e.js, ev, KindCancelled)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]OrderEvent{}
	for _, oe := range evs {
		if _, dup := out[oe.ClaimID]; dup {
			t.Errorf("claim %s cancelled twice on the stream", oe.ClaimID)
		}
		out[oe.ClaimID] = oe
	}
	return out
}

// TestCancelRestockAndNot cancels a pending claim with restock and a
// confirmed one without, on one Redis and on a Redis Cluster: stock comes
// back for the first only, both read cancelled, each has one
// order_cancelled event carrying the reason and the choice, the units are
// conserved (remaining + granted − released − restocked = on sale), and a
// rebuild from the stream gives the same stock and statuses.
func TestCancelRestockAndNot(t *testing.T) {
	onRedisAndCluster(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		cfg, configs, ids := cancelSale(t, e, "cxl", 10, 3, 4)
		sale := SaleOf(cfg)
		e.run(t, sale)
		if st, err := e.store.Confirm(ctx, cfg.ID, ids[1]); err != nil || st != StatusConfirmed {
			t.Fatalf("confirm: %v %v", st, err)
		}
		recs, err := e.svc.Cancel(ctx, sale, Cancellation{IDs: []string{ids[0]}, Reason: "ring: shared card", Restock: true, By: "ops"})
		if err != nil || len(recs) != 1 || recs[0].Status != StatusCancelled || !recs[0].Restock {
			t.Fatalf("cancel with restock: %+v, %v", recs, err)
		}
		if _, err := e.svc.Cancel(ctx, sale, Cancellation{IDs: []string{ids[1]}, Reason: "ring: shared card"}); err != nil {
			t.Fatalf("cancel of a confirmed claim: %v", err)
		}
		got := e.totals(t, sale, cfg.OnSale())
		if got.Remaining != 7 || got.Cancelled != 2 || got.Restocked != 1 {
			t.Errorf("after cancelling: %+v, want 7 left, 2 cancelled, 1 restocked", got)
		}
		e.drained(t, sale)
		evs := cancelEvents(t, e, cfg.ID)
		if len(evs) != 2 || !evs[ids[0]].Restock || evs[ids[1]].Restock || evs[ids[0]].Reason != "ring: shared card" ||
			evs[ids[1]].Was != StatusConfirmed || evs[ids[0]].By != "ops" {
			t.Errorf("order_cancelled events: %+v", evs)
		}
		rep, err := NewRebuilder(e.svc, e.js, configs).Rebuild(ctx, cfg.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Available != 7 || rep.After.Remaining != 7 || rep.Cancelled != 2 || rep.Restocked != 1 {
			t.Errorf("rebuild after cancellations: %+v, want 7 available, 2 cancelled, 1 restocked", rep)
		}
		e.totals(t, sale, cfg.OnSale())
		for i, want := range []Status{StatusCancelled, StatusCancelled, StatusPending, StatusPending} {
			rec, err := e.store.Lookup(ctx, cfg.ID, ids[i])
			if err != nil || rec.Status != want {
				t.Errorf("claim %d after the rebuild: %+v %v, want %s", i, rec, err, want)
			}
		}
		// A cancelled claim still holds its user's slot: no claim again.
		_, err = e.svc.Claim(ctx, Request{Event: cfg.ID, User: "u0", IdemKey: "again", Limit: 1, Buckets: 3})
		if !errors.Is(err, ErrLimitReached) {
			t.Errorf("a cancelled user claims again: %v, want limit reached", err)
		}
		if _, err := e.svc.Release(ctx, cfg.ID, ids[0], ""); !errors.Is(err, ErrCancelled) {
			t.Errorf("release of a cancelled claim: %v, want ErrCancelled", err)
		}
	})
}

// TestCancelRefusals: an unknown, released or already cancelled claim
// refuses the whole cancellation (ErrNotCancellable naming it), and
// nothing changes — not even the good claims named beside it; a missing
// reason or no claims is ErrBadCancellation.
func TestCancelRefusals(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	cfg, _, ids := cancelSale(t, e, "cxlbad", 10, 1, 4)
	sale := SaleOf(cfg)
	if _, err := e.svc.Release(ctx, cfg.ID, ids[0], "u0"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Cancel(ctx, sale, Cancellation{IDs: ids[1:2], Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	before := e.totals(t, sale, cfg.OnSale())
	unknown := "0-" + "00000000000000000000abcd"
	for name, c := range map[string]struct {
		ids []string
		why string
	}{
		"released":  {[]string{ids[2], ids[0]}, "released"},
		"cancelled": {[]string{ids[1], ids[3]}, "cancelled"},
		"unknown":   {[]string{unknown, ids[2]}, "unknown"},
		"not an id": {[]string{"nope", ids[2]}, "unknown"},
		"bucket":    {[]string{"7-00000000000000000000abcd"}, "unknown"},
	} {
		_, err := e.svc.Cancel(ctx, sale, Cancellation{IDs: c.ids, Reason: "r", Restock: true})
		var ce *CancelError
		if !errors.As(err, &ce) || !errors.Is(err, ErrNotCancellable) || len(ce.Why) != 1 || ce.Why[0] != c.why {
			t.Errorf("%s: %v, want ErrNotCancellable (%s)", name, err, c.why)
		}
	}
	for name, c := range map[string]Cancellation{
		"no reason":     {IDs: ids[2:3]},
		"blank reason":  {IDs: ids[2:3], Reason: "  "},
		"control chars": {IDs: ids[2:3], Reason: "a\x00b"},
		"no claims":     {Reason: "r"},
		"long reason":   {IDs: ids[2:3], Reason: string(make([]byte, MaxReasonLen+1))},
	} {
		if _, err := e.svc.Cancel(ctx, sale, c); !errors.Is(err, ErrBadCancellation) {
			t.Errorf("%s: %v, want ErrBadCancellation", name, err)
		}
	}
	if after := e.totals(t, sale, cfg.OnSale()); after != before {
		t.Errorf("refused cancellations changed the totals: %+v, was %+v", after, before)
	}
	for _, i := range []int{2, 3} {
		if rec, _ := e.store.Lookup(ctx, cfg.ID, ids[i]); rec.Status != StatusPending {
			t.Errorf("claim %d is %s after refused cancellations, want pending", i, rec.Status)
		}
	}
}

// TestCancelConcurrentOnce: 16 staff cancel the same claim at the same
// moment: one succeeds, the others answer ErrNotCancellable (cancelled),
// and the stream holds one order_cancelled event with one unit back.
func TestCancelConcurrentOnce(t *testing.T) {
	onRedisAndCluster(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		cfg, _, ids := cancelSale(t, e, "cxlrace", 5, 2, 2)
		sale := SaleOf(cfg)
		e.run(t, sale)
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, refused := 0, 0
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.svc.Cancel(ctx, sale, Cancellation{IDs: ids[:1], Reason: fmt.Sprint("staff ", i), Restock: true})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, ErrNotCancellable):
					refused++
				default:
					t.Errorf("cancel: %v", err)
				}
			}()
		}
		wg.Wait()
		if ok != 1 || refused != 15 {
			t.Errorf("%d cancellations succeeded and %d were refused, want 1 and 15", ok, refused)
		}
		if got := e.totals(t, sale, cfg.OnSale()); got.Restocked != 1 || got.Cancelled != 1 {
			t.Errorf("totals %+v, want one cancelled and restocked", got)
		}
		e.drained(t, sale)
		if evs := cancelEvents(t, e, cfg.ID); len(evs) != 1 {
			t.Errorf("%d order_cancelled events, want 1", len(evs))
		}
	})
}

// TestCancelOutboxRepublished: a node that cancelled and died before
// publishing leaves the order_cancelled event in the outbox; the sweeper
// publishes it, its notice (the webhook) follows, and a republish with the
// same Nats-Msg-Id is stored once. Reconcile finds nothing missing.
func TestCancelOutboxRepublished(t *testing.T) {
	var mu sync.Mutex
	notices := map[string]int{}
	e := singleRedis(t, WithCancelNotice(func(_ context.Context, oe OrderEvent) error {
		mu.Lock()
		defer mu.Unlock()
		notices[oe.ClaimID]++
		return nil
	}))
	ctx := context.Background()
	cfg, _, ids := cancelSale(t, e, "cxlbox", 4, 1, 2)
	sale := SaleOf(cfg)
	// The dying node: its publisher never reaches JetStream.
	dead := NewService(e.store, publisherFunc(func(context.Context, string, string, []byte) error { return ErrUnavailable }))
	if _, err := dead.Cancel(ctx, sale, Cancellation{IDs: ids[:1], Reason: "ring"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("cancel on a node without a stream: %v, want ErrUnavailable", err)
	}
	box, err := e.store.outboxEntries(ctx, cfg.ID, 0)
	if got := e.totals(t, sale, cfg.OnSale()); err != nil || box[ids[0]+":cancelled"] == "" || got.Cancelled != 1 {
		t.Fatalf("totals %+v, outbox %v (%v): want the cancellation done and its event in the outbox", got, box, err)
	}
	e.run(t, sale)
	e.drained(t, sale)
	testenv.WaitFor(t, "the notice", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return notices[ids[0]] >= 1
	})
	// A second publish of the same event (another node's sweep) is a
	// duplicate.
	if _, err := e.svc.publishMany(ctx, cfg.ID, []message{encoded(OrderEvent{Type: KindCancelled, Event: cfg.ID, ClaimID: ids[0], User: "u0", Units: 1})}); err != nil {
		t.Fatal(err)
	}
	if evs := cancelEvents(t, e, cfg.ID); len(evs) != 1 {
		t.Errorf("%d order_cancelled events, want 1", len(evs))
	}
	if n, err := NewService(e.store, e.pub, WithStream(e.js)).Reconcile(ctx, sale, 100); err != nil || n != 0 {
		t.Errorf("reconcile after the sweep: %d republished, %v; want 0", n, err)
	}
}
