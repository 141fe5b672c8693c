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

// gatedPublisher holds every publish until its gate opens, like a NATS
// client buffering publishes while it reconnects.
type gatedPublisher struct {
	real *Publisher
	gate chan struct{}
}

func (g *gatedPublisher) Publish(ctx context.Context, subject, id string, payload []byte) error {
	<-g.gate
	return g.real.Publish(ctx, subject, id, payload)
}

func (g *gatedPublisher) PublishGrant(ctx context.Context, ev, id string, payload []byte) error {
	<-g.gate
	return g.real.PublishGrant(ctx, ev, id, payload)
}

// TestSupersededPrimaryNeverAcknowledged partitions the old primary during a
// rebuild: a replica is promoted and the event rebuilt on it, while a node
// still connected to the old primary keeps granting there. A grant decided
// there before the rebuild but published after it (held in the client's
// buffer), a grant decided there after the rebuild, and a replay of the
// first are all refused (503 paused), never acknowledged; the order worker
// records them void; and every acknowledged claim is one the rebuilt stock
// counts, so the units acknowledged never exceed the units on sale.
func TestSupersededPrimaryNeverAcknowledged(t *testing.T) {
	supersededPrimary(t, testenv.StartNATS(t).URL(), 1)
}

// TestSupersededPrimaryNeverAcknowledgedR3 is the same partition on a
// NATS cluster with the order stream on three replicas, where the
// publishers judge grants from their views of the markers (Follow).
func TestSupersededPrimaryNeverAcknowledgedR3(t *testing.T) {
	supersededPrimary(t, testenv.StartNATSCluster(t, 3).URL(), 3)
}

func supersededPrimary(t *testing.T, natsURL string, replicas int) {
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := newEnv(t, primary.Client(t), natsURL, replicas)
	cfg := saleConfig(t, old, Sale{ID: "split", Buckets: 1}, 8)
	acked := map[string]bool{}
	claim := func(svc *Service, user, key string) (Result, error) {
		res, err := svc.Claim(ctx, Request{Event: cfg.ID, User: user, IdemKey: key, Limit: 1, Buckets: 1})
		if err == nil {
			acked[res.ClaimID] = true
		}
		return res, err
	}
	for i := range 3 {
		if _, err := claim(old.svc, fmt.Sprint("a", i), "k"); err != nil {
			t.Fatal(err)
		}
	}
	promoted := NewStore(replica.Client(t))
	testenv.WaitFor(t, "the replica to catch up", 10*time.Second, func() bool {
		got, err := promoted.Totals(ctx, SaleOf(cfg))
		return err == nil && got.Granted == 3
	})
	// The partition: the replica is promoted; the old primary runs on,
	// and a node still reaches it.
	if err := replica.Client(t).Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	held := &gatedPublisher{real: old.pub, gate: make(chan struct{})}
	cut := NewService(old.store, held)
	heldDone := make(chan error, 1)
	go func() {
		_, err := cut.Claim(ctx, Request{Event: cfg.ID, User: "held", IdemKey: "k", Limit: 1, Buckets: 1})
		heldDone <- err
	}()
	testenv.WaitFor(t, "the held grant on the old primary", 10*time.Second, func() bool {
		got, err := old.store.Totals(ctx, SaleOf(cfg))
		return err == nil && got.Granted == 4
	})

	// The rebuild on the promoted replica.
	e := newEnv(t, replica.Client(t), natsURL, replicas)
	rb := NewRebuilder(e.svc, e.js, event.NewStore(e.rdb))
	rep, err := rb.Rebuild(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Granted != 3 || rep.Available != cfg.OnSale()-3 {
		t.Fatalf("rebuild %+v, want the 3 published grants counted", rep)
	}

	// After it: a fresh grant on the old primary, the held publish, and a
	// replay of the held claim are all refused.
	if res, err := claim(old.svc, "late", "k"); !errors.Is(err, ErrPaused) {
		t.Errorf("grant on the superseded primary after the rebuild: %+v %v, want 503 paused", res, err)
	}
	close(held.gate)
	if err := <-heldDone; !errors.Is(err, ErrPaused) {
		t.Errorf("grant published after the rebuild read the stream: %v, want 503 paused", err)
	}
	if res, err := claim(old.svc, "held", "k"); !errors.Is(err, ErrPaused) {
		t.Errorf("replay of the held grant: %+v %v, want 503 paused", res, err)
	}

	// The sale goes on to the end on the rebuilt stock.
	for i := 0; ; i++ {
		if _, err := claim(e.svc, fmt.Sprint("b", i), "k"); errors.Is(err, ErrSoldOut) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if int64(len(acked)) > cfg.OnSale() {
		t.Errorf("%d claims acknowledged, %d units on sale", len(acked), cfg.OnSale())
	}
	runWorker(t, e)
	workerCaughtUp(t, e)
	statuses, err := OrderStatuses(ctx, e.js, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	granted, _ := e.streamCheck(t, cfg.ID)
	for id, oe := range granted {
		if acked[id] != (statuses[id] == "confirmed") {
			t.Errorf("claim %s of %s: acknowledged %v, order %q", id, oe.User, acked[id], statuses[id])
		}
	}
	// A second rebuild counts exactly the acknowledged claims.
	rep, err = rb.Rebuild(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("second rebuild %+v", rep)
	if rep.Granted != len(acked) || rep.Available != cfg.OnSale()-int64(len(acked)) || rep.Oversold != 0 {
		t.Errorf("second rebuild %+v, want %d granted, none oversold", rep, len(acked))
	}
	counted, err := CountedEvents(ctx, e.js, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(counted) != len(acked) {
		t.Errorf("%d counted events on the stream, want the %d acknowledged grants", len(counted), len(acked))
	}
	// Failing back to the old primary: its outbox still holds the void
	// grants; its rebuild drops them and counts what the stream counts.
	rep, err = NewRebuilder(old.svc, old.js, event.NewStore(old.rdb)).Rebuild(ctx, cfg.ID)
	if err != nil {
		t.Fatalf("rebuild on the old primary: %v", err)
	}
	if rep.Granted != len(acked) || rep.Oversold != 0 {
		t.Errorf("rebuild on the old primary %+v, want %d granted", rep, len(acked))
	}
}
