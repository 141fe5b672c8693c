package claim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
)

// heldPublisher is a node stalled between claim.lua and its publish (a GC
// pause, a frozen VM, a slow network): PublishGrant waits until release is
// closed, then publishes.
type heldPublisher struct {
	*Publisher
	held, release chan struct{}
}

func (p *heldPublisher) PublishGrant(ctx context.Context, ev, id string, payload []byte) error {
	close(p.held)
	<-p.release
	return p.Publisher.PublishGrant(ctx, ev, id, payload)
}

// TestLateCopyPastDuplicateWindow stalls node A after its grant until
// node B's sweeper has published the orphaned order event and JetStream's
// duplicate window has passed; then A publishes its copy. JetStream stores
// it again — the stream holds the grant twice, as the docs now say — and
// everything downstream counts the claim once: A's client gets its claim,
// the order worker records one order, a rebuild counts one grant, and
// CountGranted sees one distinct claim.
func TestLateCopyPastDuplicateWindow(t *testing.T) {
	e := singleRedis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := e.js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	short := st.CachedInfo().Config
	short.Duplicates = 300 * time.Millisecond
	if _, err := e.js.UpdateStream(ctx, short); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	cfg := event.Config{ID: "late", Name: "late", Supply: 3, PerUserLimit: 1,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: 1}
	cfg.Defaults()
	configs := event.NewStore(e.rdb)
	if _, err := configs.Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	sale := SaleOf(cfg)
	if err := e.store.Lay(ctx, sale, cfg.OnSale()); err != nil {
		t.Fatal(err)
	}
	stalled := &heldPublisher{Publisher: NewPublisher(e.js), held: make(chan struct{}), release: make(chan struct{})}
	nodeA := NewService(e.store, stalled)
	type answer struct {
		res Result
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := nodeA.Claim(ctx, Request{Event: cfg.ID, User: "ann", IdemKey: "k", Limit: 1, Buckets: 1, ClaimTTL: time.Hour})
		answered <- answer{res, err}
	}()
	<-stalled.held
	e.run(t, sale) // node B: its sweeper publishes the orphaned entry
	e.drained(t, sale)
	if msgs, _, err := CountGranted(ctx, e.js, cfg.ID); err != nil || msgs != 1 {
		t.Fatalf("stream after the sweep: %d granted messages %v, want 1", msgs, err)
	}
	// The window has passed once JetStream stores again a probe id it
	// stored after the sweep.
	probe := func() bool {
		m := &nats.Msg{Subject: Subject("late-probe", KindGranted), Data: []byte(`{}`), Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, "probe")
		ack, err := e.js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return !ack.Duplicate
	}
	probe()
	testenv.WaitFor(t, "the duplicate window to pass", time.Minute, probe)
	close(stalled.release)
	a := <-answered
	if a.err != nil || a.res.ClaimID == "" {
		t.Fatalf("node A's claim: %+v %v, want it granted", a.res, a.err)
	}
	msgs, distinct, err := CountGranted(ctx, e.js, cfg.ID)
	if err != nil || msgs != 2 || distinct != 1 {
		t.Fatalf("stream: %d granted messages for %d claims %v; want the late copy stored again: 2 for 1", msgs, distinct, err)
	}

	w, err := NewWorker(ctx, e.store, e.js, WorkerConfig{OnError: func(err error) { t.Logf("worker: %v", err) }})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	testenv.WaitFor(t, "the worker to catch up", time.Minute, func() bool {
		lag, err := OrderLag(ctx, e.js)
		return err == nil && lag != nil && lag.Pending == 0 && lag.AckPending == 0
	})
	statuses, err := OrderStatuses(ctx, e.js, cfg.ID)
	if err != nil || len(statuses) != 1 || statuses[a.res.ClaimID] != StatusConfirmed {
		t.Errorf("orders: %v %v, want one, confirmed", statuses, err)
	}
	rep, err := NewRebuilder(e.svc, e.js, configs).Rebuild(ctx, cfg.ID)
	if err != nil || rep.Granted != 1 || rep.After.Remaining != cfg.OnSale()-1 {
		t.Errorf("rebuild: %+v %v, want 1 granted, %d left", rep, err, cfg.OnSale()-1)
	}
	if got := fmt.Sprint(e.totals(t, sale, cfg.OnSale()).Granted); got != "1" {
		t.Errorf("Redis counts %s grants, want 1", got)
	}
}
