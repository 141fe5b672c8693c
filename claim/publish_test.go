package claim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

// dyingPublisher publishes through real until it is killed; then, like a
// process that died, it publishes nothing — or, in lostAck mode, it
// publishes but dies before the acknowledgement reaches the caller.
type dyingPublisher struct {
	real    publisher
	dead    atomic.Bool
	lostAck bool
}

func (p *dyingPublisher) Publish(ctx context.Context, subject, id string, payload []byte) error {
	if !p.dead.Load() {
		return p.real.Publish(ctx, subject, id, payload)
	}
	if p.lostAck {
		_ = p.real.Publish(ctx, subject, id, payload)
	}
	return fmt.Errorf("%w: publisher killed", ErrUnavailable)
}

func (p *dyingPublisher) PublishGrant(ctx context.Context, ev, id string, payload []byte) error {
	if !p.dead.Load() {
		return p.real.PublishGrant(ctx, ev, id, payload)
	}
	if p.lostAck {
		_ = p.real.PublishGrant(ctx, ev, id, payload)
	}
	return fmt.Errorf("%w: publisher killed", ErrUnavailable)
}

// TestPublisherKilled kills the publisher between grant and publish in the
// middle of a sale — granted claims sit in the outbox, unacknowledged —
// then starts a new Service (the restarted node) whose sweeper publishes
// them. Every acknowledged claim is on the stream exactly once, every grant
// in Redis reaches the stream exactly once, and a client retrying with its
// idempotency key gets its claim back.
func TestPublisherKilled(t *testing.T) {
	for _, lostAck := range []bool{false, true} {
		t.Run(fmt.Sprintf("lost-ack=%v", lostAck), func(t *testing.T) {
			e := singleRedis(t)
			ctx := context.Background()
			const ev, units, buckets = "killed", 300, 2
			sale := Sale{ID: ev, Buckets: buckets}
			if err := e.store.Lay(ctx, sale, units); err != nil {
				t.Fatal(err)
			}
			dying := &dyingPublisher{real: e.pub, lostAck: lostAck}
			first := NewService(e.store, dying)

			var mu sync.Mutex
			acked := map[string]string{} // claim id → user
			var failed []Request
			var wg sync.WaitGroup
			for i := range 400 {
				if i == 150 {
					wg.Wait()
					dying.dead.Store(true)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := Request{Event: ev, User: fmt.Sprint("k", i), IdemKey: "x", Limit: 1, Buckets: buckets}
					res, err := first.Claim(ctx, req)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						acked[res.ClaimID] = req.User
					case errors.Is(err, ErrUnavailable):
						failed = append(failed, req)
					case !errors.Is(err, ErrSoldOut):
						t.Errorf("claim: %v", err)
					}
				}()
			}
			wg.Wait()
			if len(acked) != 150 || len(failed) != 150 {
				t.Fatalf("%d acknowledged, %d failed: want 150 and 150", len(acked), len(failed))
			}
			// The dead node never published these: they wait in the outbox.
			if got := e.totals(t, sale, units); got.Outbox < 150 {
				t.Fatalf("outbox holds %d entries, want at least the 150 unpublished grants", got.Outbox)
			}

			// The restarted node sweeps the outbox.
			e.run(t, sale)
			e.drained(t, sale)
			for _, req := range failed {
				res, err := e.svc.Claim(ctx, req)
				if err != nil || !res.Replay {
					t.Fatalf("retry of %s: %+v %v, want the same claim replayed", req.User, res, err)
				}
				acked[res.ClaimID] = req.User
			}
			granted, _ := e.streamCheck(t, ev)
			if len(granted) != 300 {
				t.Errorf("stream holds %d granted claims, want 300", len(granted))
			}
			for id, user := range acked {
				if oe, ok := granted[id]; !ok || oe.User != user {
					t.Errorf("acknowledged claim %s of %s is not on the stream", id, user)
				}
			}
			if got := e.totals(t, sale, units); got.Granted != 300 || got.Outbox != 0 {
				t.Errorf("totals %+v, want 300 granted and an empty outbox", got)
			}
			// A second sweep finds nothing left to publish: no duplicates.
			testenv.WaitFor(t, "a quiet sweep", 5*time.Second, func() bool {
				n, err := e.svc.publishOutbox(ctx, ev, 0, 0)
				return err == nil && len(n) == 0
			})
			e.streamCheck(t, ev)
		})
	}
}
