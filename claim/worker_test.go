package claim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestOrderWorker runs the order worker over a sale with releases and a
// duplicate published after JetStream's duplicate window would have
// forgotten the first: one order per claim, confirmed claims in Redis,
// released ones recorded as released, and no lag once it caught up.
func TestOrderWorker(t *testing.T) {
	eachRedis(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const ev, units = "orders", 50
		if err := e.store.Lay(ctx, Sale{ID: ev, Buckets: 2}, units); err != nil {
			t.Fatal(err)
		}
		e.run(t, Sale{ID: ev, Buckets: 2})
		var ids []string
		for i := range units {
			res, err := e.svc.Claim(ctx, Request{Event: ev, User: fmt.Sprint("w", i), IdemKey: "k", Limit: 1, Buckets: 2})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, res.ClaimID)
		}
		for i, id := range ids[:5] {
			if _, err := e.svc.Release(ctx, ev, id, fmt.Sprint("w", i)); err != nil {
				t.Fatal(err)
			}
		}
		// A republish after the duplicate window is a new message.
		first, err := e.js.Stream(ctx, StreamName)
		if err != nil {
			t.Fatal(err)
		}
		m, err := first.GetLastMsgForSubject(ctx, Subject(ev, "granted"))
		if err != nil {
			t.Fatal(err)
		}
		dup := &nats.Msg{Subject: m.Subject, Data: m.Data, Header: nats.Header{}}
		dup.Header.Set(jetstream.MsgIDHeader, "after-the-window")
		if _, err := e.js.PublishMsg(ctx, dup); err != nil {
			t.Fatal(err)
		}
		if lag, err := OrderLag(ctx, e.js); err != nil || lag != nil {
			t.Fatalf("lag before any worker: %+v %v, want none", lag, err)
		}

		w, err := NewWorker(ctx, e.store, e.js, WorkerConfig{OnError: func(err error) { t.Logf("worker: %v", err) }})
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(wctx) }()
		defer func() { stop(); <-done }()

		testenv.WaitFor(t, "the worker to catch up", 20*time.Second, func() bool {
			lag, err := OrderLag(ctx, e.js)
			return err == nil && lag != nil && lag.Pending == 0 && lag.AckPending == 0
		})
		statuses, err := OrderStatuses(ctx, e.js, ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(statuses) != units {
			t.Errorf("%d orders recorded, want %d (one per claim)", len(statuses), units)
		}
		for i, id := range ids {
			want := StatusConfirmed
			if i < 5 {
				want = StatusReleased
			}
			rec, err := e.store.Lookup(ctx, ev, id)
			if err != nil || rec.Status != want || statuses[id] != want {
				t.Errorf("claim %s: redis %q (%v), order %q; want %s", id, rec.Status, err, statuses[id], want)
			}
		}
	})
}

// TestReconcile loses order events between Redis and the stream — a
// publisher that reported success without publishing — and lets the
// reconciler find and republish exactly those.
func TestReconcile(t *testing.T) {
	e := singleRedis(t, WithStream(nil))
	e.svc.js, e.svc.reconcileAge = e.js, 0
	ctx := context.Background()
	const ev = "recon"
	sale := Sale{ID: ev, Buckets: 2}
	if err := e.store.Lay(ctx, Sale{ID: ev, Buckets: 2}, 20); err != nil {
		t.Fatal(err)
	}
	liar := NewService(e.store, publisherFunc(func(context.Context, string, string, []byte) error { return nil }))
	for i := range 10 {
		svc := e.svc
		if i%3 == 0 {
			svc = liar
		}
		res, err := svc.Claim(ctx, Request{Event: ev, User: fmt.Sprint("r", i), IdemKey: "k", Limit: 1, Buckets: 2})
		if err != nil {
			t.Fatal(err)
		}
		if i == 9 {
			// Released, and the released event lost too.
			if _, err := liar.Release(ctx, ev, res.ClaimID, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, svc := range []*Service{e.svc, liar} {
		svc.flush(ctx, func(err error) { t.Fatal(err) })
	}
	n, err := e.svc.Reconcile(ctx, sale, 100)
	if err != nil || n != 5 {
		t.Fatalf("reconcile republished %d (%v), want the 4 lost grants and the lost release", n, err)
	}
	granted, released := e.streamCheck(t, ev)
	if len(granted) != 10 || len(released) != 1 {
		t.Errorf("stream: %d granted, %d released; want 10 and 1", len(granted), len(released))
	}
	if n, err := e.svc.Reconcile(ctx, sale, 100); err != nil || n != 0 {
		t.Errorf("second reconcile republished %d (%v), want 0", n, err)
	}
}

type publisherFunc func(ctx context.Context, subject, id string, payload []byte) error

func (f publisherFunc) Publish(ctx context.Context, subject, id string, payload []byte) error {
	return f(ctx, subject, id, payload)
}

func (f publisherFunc) PublishGrant(ctx context.Context, ev, id string, payload []byte) error {
	return f(ctx, Subject(ev, "granted"), id, payload)
}
