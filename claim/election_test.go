package claim

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	sleep "github.com/anteroom/anteroom/internal/wait"
)

// TestRebuildThroughLeaderElections moves the JetStream meta leader and
// the order stream's leader over and over ($JS.API.META.LEADER.STEPDOWN,
// $JS.API.STREAM.LEADER.STEPDOWN) while rebuilds, reconciliations and the
// report's reads run against an R3 cluster: each completes, and with the
// same figures as a rebuild before the elections. Without the retries of
// internal/jsretry a request sent between leaders failed (no responders)
// or waited for the caller's whole deadline.
func TestRebuildThroughLeaderElections(t *testing.T) {
	nc := testenv.StartNATSCluster(t, 3)
	e := newEnv(t, testenv.StartRedis(t).Client(t), nc.URL(), 3, WithStream(nil))
	e.svc.js = e.js
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := saleConfig(t, e, Sale{ID: "elect", Buckets: 2}, 20)
	var ids []string
	for i := range 6 {
		res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: fmt.Sprint("u", i), IdemKey: "k", Limit: 1, Buckets: 2})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ClaimID)
	}
	if _, err := e.svc.Release(ctx, cfg.ID, ids[0], ""); err != nil {
		t.Fatal(err)
	}
	runWorker(t, e)
	workerCaughtUp(t, e)
	rb := NewRebuilder(e.svc, e.js, event.NewStore(e.rdb))
	base, err := rb.Rebuild(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if base.Granted != 6 || base.Released != 1 || base.Available != cfg.OnSale()-5 || base.Oversold != 0 {
		t.Fatalf("rebuild before the elections %+v, want 6 granted, 1 released", base)
	}

	// The elections: each step-down waits for the leader it moves, so
	// one election at a time, until the reads are done.
	var moves atomic.Int64
	sctx, stop := context.WithCancel(ctx)
	stepped := make(chan error, 1)
	go func() {
		defer close(stepped)
		for sctx.Err() == nil {
			err := nc.StepDownMeta(sctx)
			if err == nil {
				err = nc.StepDownStream(sctx, StreamName)
			}
			if err != nil {
				if sctx.Err() == nil {
					stepped <- err
				}
				return
			}
			moves.Add(1)
			// A moment of calm between elections, as between real
			// ones; during each, the reads must wait it out.
			sleep.Sleep(sctx, 200*time.Millisecond)
		}
	}()
	testenv.WaitFor(t, "a first step-down", time.Minute, func() bool { return moves.Load() > 0 })

	// Rounds until the leaders have moved a few times during them (a
	// round is far quicker than a move); bounded by the count and ctx.
	const want = 5
	from := moves.Load()
	for round := 0; round < 5000 && (round < 3 || moves.Load() < from+want); round++ {
		rep, err := rb.Rebuild(ctx, cfg.ID)
		if err != nil {
			t.Fatalf("round %d, after %d moves: rebuild: %v", round, moves.Load(), err)
		}
		if rep.Granted != base.Granted || rep.Released != base.Released || rep.Confirmed != base.Confirmed ||
			rep.Available != base.Available || rep.Oversold != 0 || rep.Republished != 0 {
			t.Fatalf("round %d: rebuild %+v, want the figures of %+v", round, rep, base)
		}
		if n, err := e.svc.Reconcile(ctx, SaleOf(cfg), 100); err != nil || n != 0 {
			t.Fatalf("round %d, after %d moves: reconcile: %d republished, %v", round, moves.Load(), n, err)
		}
		// The report's reads: the events, the orders, the worker's lag.
		evs, err := CountedEvents(ctx, e.js, cfg.ID)
		if err != nil || len(evs) != 7 {
			t.Fatalf("round %d, after %d moves: counted events: %d, %v; want 7", round, moves.Load(), len(evs), err)
		}
		statuses, err := OrderStatuses(ctx, e.js, cfg.ID)
		if err != nil || len(statuses) != 6 {
			t.Fatalf("round %d, after %d moves: order statuses: %v, %v; want 6", round, moves.Load(), statuses, err)
		}
		if _, err := OrderLag(ctx, e.js); err != nil {
			t.Fatalf("round %d, after %d moves: order lag: %v", round, moves.Load(), err)
		}
	}
	stop()
	if err := <-stepped; err != nil {
		t.Fatalf("step-down: %v", err)
	}
	t.Logf("%d meta and stream leader moves during the reads", moves.Load()-from)
	if moves.Load() < from+want {
		t.Errorf("only %d leader moves during the reads, want at least %d", moves.Load()-from, want)
	}
}
