package claim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestWorkerReleasedBeforeGranted delivers a claim's released event before
// its granted event, and a granted event again after the release (a
// republish after JetStream's duplicate window): the order is created
// released, and a later granted event never turns it back into confirmed —
// whether Redis still holds the claim (released) or lost it.
func TestWorkerReleasedBeforeGranted(t *testing.T) {
	e := singleRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := saleConfig(t, e, Sale{ID: "rbg", Buckets: 1}, 5)
	// The granted events are lost on the way; the released ones are not.
	liar := NewService(e.store, publisherFunc(func(context.Context, string, string, []byte) error { return nil }))
	var ids []string
	for _, u := range []string{"kept", "lost"} {
		res, err := liar.Claim(ctx, Request{Event: cfg.ID, User: u, IdemKey: "k", Limit: 1, Buckets: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Release(ctx, cfg.ID, res.ClaimID, u); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ClaimID)
	}
	granted := make([]message, len(ids))
	for i, id := range ids {
		rec, err := e.store.Lookup(ctx, cfg.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		granted[i] = encoded(OrderEvent{Type: "granted", Event: cfg.ID, ClaimID: id, User: rec.User, Units: 1, At: time.UnixMilli(rec.AtMs).UTC()})
	}
	// Redis loses the second claim's record.
	if err := e.rdb.HDel(ctx, bucketOf(cfg.ID, 0).records(), ids[1]).Err(); err != nil {
		t.Fatal(err)
	}
	for _, m := range granted {
		if err := e.pub.Publish(ctx, Subject(cfg.ID, "granted"), m.id, []byte(m.payload)); err != nil {
			t.Fatal(err)
		}
	}
	runWorker(t, e)
	workerCaughtUp(t, e)
	check := func(when string) {
		t.Helper()
		st, err := OrderStatuses(ctx, e.js, cfg.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if st[id] != "released" {
				t.Errorf("%s: order %s is %q, want released", when, id, st[id])
			}
		}
		if rec, err := e.store.Lookup(ctx, cfg.ID, ids[0]); err != nil || rec.Status != "released" {
			t.Errorf("%s: claim in Redis %+v %v, want released", when, rec, err)
		}
	}
	check("released before granted")
	// The granted events again, as new messages.
	for _, m := range granted {
		if err := e.pub.Publish(ctx, Subject(cfg.ID, "granted"), m.id+":again", []byte(m.payload)); err != nil {
			t.Fatal(err)
		}
	}
	workerCaughtUp(t, e)
	check("granted redelivered after the release")
}

// TestWorkerReleaseFirstInRedis: the worker records a claim's order, but
// the user's release reaches Redis before the confirmation does. Redis
// decides (confirm.lua answers released), so the order ends released, and
// its unit is back in stock.
func TestWorkerReleaseFirstInRedis(t *testing.T) {
	e := singleRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := saleConfig(t, e, Sale{ID: "race", Buckets: 1}, 5)
	res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: "u", IdemKey: "k", Limit: 1, Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The release reaches Redis first; its event is lost on the way, so
	// the worker sees only the granted event.
	liar := NewService(e.store, publisherFunc(func(context.Context, string, string, []byte) error { return nil }))
	if _, err := liar.Release(ctx, cfg.ID, res.ClaimID, "u"); err != nil {
		t.Fatal(err)
	}
	runWorker(t, e)
	workerCaughtUp(t, e)
	st, err := OrderStatuses(ctx, e.js, cfg.ID)
	if err != nil || st[res.ClaimID] != "released" {
		t.Errorf("order %q (%v), want released: Redis released the claim before confirming it", st[res.ClaimID], err)
	}
	if got := e.totals(t, SaleOf(cfg), cfg.OnSale()); got.Remaining != cfg.OnSale() {
		t.Errorf("remaining %d, want %d", got.Remaining, cfg.OnSale())
	}
}

// TestWorkerRecoveryBranches: an undecodable message and one of an unknown
// type are terminated (never block the consumer), and a confirmation
// refused while a rebuild froze the bucket is retried until it succeeds.
func TestWorkerRecoveryBranches(t *testing.T) {
	e := singleRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := saleConfig(t, e, Sale{ID: "branches", Buckets: 1}, 5)
	if err := e.pub.Publish(ctx, Subject(cfg.ID, "granted"), "garbage", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	odd := encoded(OrderEvent{Type: "refunded", Event: cfg.ID, ClaimID: "0-0123456789abcdef01234567"})
	if err := e.pub.Publish(ctx, Subject(cfg.ID, "granted"), "odd", []byte(odd.payload)); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: "u", IdemKey: "k", Limit: 1, Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	rb := NewRebuilder(e.svc, e.js, nil)
	token, err := rb.freeze(ctx, SaleOf(cfg))
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan struct{}, 1)
	w, err := NewWorker(ctx, e.store, e.js, WorkerConfig{OnError: func(err error) {
		t.Logf("worker: %v", err)
		if errors.Is(err, ErrPaused) {
			select {
			case refused <- struct{}{}:
			default:
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	select {
	case <-refused:
	case <-ctx.Done():
		t.Fatal("the worker never tried to confirm on the frozen bucket")
	}
	if rec, err := e.store.Lookup(ctx, cfg.ID, res.ClaimID); err != nil || rec.Status != "pending" {
		t.Fatalf("claim while frozen: %+v %v, want pending", rec, err)
	}
	if err := rb.unfreeze(ctx, SaleOf(cfg), token); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the retried confirmation", 20*time.Second, func() bool {
		rec, err := e.store.Lookup(ctx, cfg.ID, res.ClaimID)
		return err == nil && rec.Status == "confirmed"
	})
	workerCaughtUp(t, e)
	if st, err := OrderStatuses(ctx, e.js, cfg.ID); err != nil || len(st) != 1 {
		t.Errorf("orders %v (%v), want only the real claim's", st, err)
	}
}
