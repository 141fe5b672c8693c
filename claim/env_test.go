package claim

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// env is a Store and a Service on real servers started for one test.
type env struct {
	rdb   redis.UniversalClient
	js    jetstream.JetStream
	store *Store
	pub   *Publisher
	svc   *Service
}

// newEnv connects to rdb and to the NATS server at natsURL, creates the
// order stream with replicas, and builds a Service with opts.
func newEnv(t testing.TB, rdb redis.UniversalClient, natsURL string, replicas int, opts ...Option) *env {
	t.Helper()
	nc, err := nats.Connect(natsURL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("nats connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := EnsureStream(ctx, js, replicas); err != nil {
		t.Fatal(err)
	}
	e := &env{rdb: rdb, js: js, store: NewStore(rdb), pub: NewPublisher(js)}
	if replicas > 1 {
		// As a node on an external cluster: the fence judges grants
		// from the publisher's view of the markers.
		follow(t, e.pub)
	}
	e.svc = NewService(e.store, e.pub, opts...)
	return e
}

// follow runs p.Follow until the test ends and waits for its view.
func follow(t testing.TB, p *Publisher) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Follow(ctx, func(err error) { t.Logf("marker view: %v", err) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	testenv.WaitFor(t, "the marker view", 30*time.Second, func() bool { return p.view.Load() != nil })
}

// singleRedis starts a redis-server and NATS and returns an env on them.
func singleRedis(t *testing.T, opts ...Option) *env {
	t.Helper()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	return newEnv(t, r.Client(t), ns.URL(), 1, opts...)
}

// eachRedis runs f as a subtest on redis-server and on the embedded
// default (miniredis, what a node runs with no Redis configured), each
// with a NATS server of its own: for tests of scripts whose behaviour
// must not depend on the server.
func eachRedis(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	testenv.EachRedis(t, func(t *testing.T, rdb *redis.Client) {
		f(t, newEnv(t, rdb, testenv.StartNATS(t).URL(), 1))
	})
}

// singleRedisB is singleRedis for benchmarks.
func singleRedisB(b *testing.B, opts ...Option) *env {
	b.Helper()
	r := testenv.StartRedis(b)
	ns := testenv.StartNATS(b)
	return newEnv(b, r.Client(b), ns.URL(), 1, opts...)
}

// run starts the Service's background loop with short periods until the
// test ends.
func (e *env) run(t *testing.T, sales ...Sale) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.svc.Run(ctx, RunConfig{
			Sales: func() []Sale { return sales }, SweepEvery: 100 * time.Millisecond, OrphanAge: 300 * time.Millisecond,
			ExpireEvery: 50 * time.Millisecond, ReconcileEvery: 500 * time.Millisecond,
			OnError: func(err error) { t.Logf("background: %v", err) },
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// totals reads the sale's totals and checks the conservation of units.
func (e *env) totals(t *testing.T, sale Sale, onSale int64) Totals {
	t.Helper()
	got, err := e.store.Totals(context.Background(), sale)
	if err != nil {
		t.Fatal(err)
	}
	if sum := got.Remaining + got.Parked + got.Granted - got.Released - got.Restocked; sum != onSale {
		t.Errorf("remaining %d + parked %d + granted %d − released %d − restocked %d = %d, want %d units on sale",
			got.Remaining, got.Parked, got.Granted, got.Released, got.Restocked, sum, onSale)
	}
	return got
}

// drained polls until the sale's outboxes are empty.
func (e *env) drained(t *testing.T, sale Sale) {
	t.Helper()
	testenv.WaitFor(t, "outbox to drain", 20*time.Second, func() bool {
		got, err := e.store.Totals(context.Background(), sale)
		return err == nil && got.Outbox == 0
	})
}

// streamCheck reads the event's order events and checks that each claim
// has exactly one granted message and at most one released message; it
// returns the granted events by claim id and the released claim ids.
func (e *env) streamCheck(t *testing.T, ev string) (map[string]OrderEvent, map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := ReadEvents(ctx, e.js, ev)
	if err != nil {
		t.Fatal(err)
	}
	granted, released := map[string]OrderEvent{}, map[string]bool{}
	for _, oe := range evs {
		switch oe.Type {
		case "granted":
			if _, dup := granted[oe.ClaimID]; dup {
				t.Errorf("claim %s granted twice on the stream", oe.ClaimID)
			}
			granted[oe.ClaimID] = oe
		case "released":
			if released[oe.ClaimID] {
				t.Errorf("claim %s released twice on the stream", oe.ClaimID)
			}
			released[oe.ClaimID] = true
		}
	}
	for id := range released {
		if _, ok := granted[id]; !ok {
			t.Errorf("claim %s released on the stream but never granted", id)
		}
	}
	return granted, released
}
