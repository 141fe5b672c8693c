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
	"github.com/nats-io/nats.go/jetstream"
)

// TestNATSServerStoppedMidSale stops one NATS server of three — the order
// stream's leader, so the stream must elect a new one — while clients
// claim from a stream with three replicas. Clients retry what failed with
// the same idempotency key. Every claim a client was told about is on the
// stream, exactly once.
func TestNATSServerStoppedMidSale(t *testing.T) {
	nc := testenv.StartNATSCluster(t, 3)
	r := testenv.StartRedis(t)
	e := newEnv(t, r.Client(t), nc.URL(), 3, WithBatch(32))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ev, units, buckets, users = "natsdown", 1500, 2, 2000
	sale := Sale{ID: ev, Buckets: buckets}
	if err := e.store.Lay(ctx, sale, units); err != nil {
		t.Fatal(err)
	}
	e.run(t, sale)

	var mu sync.Mutex
	acked := map[string]string{}
	var done, retries atomic.Int64
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				req := Request{Event: ev, User: fmt.Sprint("n", i), IdemKey: "x", Limit: 1, Buckets: buckets}
				for {
					cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
					res, err := e.svc.Claim(cctx, req)
					ccancel()
					if err == nil {
						mu.Lock()
						acked[res.ClaimID] = req.User
						mu.Unlock()
						break
					}
					if errors.Is(err, ErrSoldOut) || ctx.Err() != nil {
						break
					}
					retries.Add(1)
					time.Sleep(50 * time.Millisecond)
				}
				done.Add(1)
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range users {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()

	testenv.WaitFor(t, "a third of the sale", time.Minute, func() bool { return done.Load() >= users/3 })
	leader := streamLeader(t, e.js)
	for i := range 3 {
		if nc.Server(i).Name() == leader {
			nc.Stop(i)
			t.Logf("stopped %s, the stream leader, after %d claims", leader, done.Load())
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the sale did not finish in time")
	}
	if len(acked) != units {
		t.Errorf("%d claims acknowledged, want %d", len(acked), units)
	}
	e.drained(t, sale)
	granted, _ := e.streamCheck(t, ev)
	for id, user := range acked {
		if oe, ok := granted[id]; !ok || oe.User != user {
			t.Errorf("acknowledged claim %s of %s is missing from the stream", id, user)
		}
	}
	if len(granted) != units {
		t.Errorf("stream holds %d granted claims, want %d", len(granted), units)
	}
	t.Logf("%d acknowledged, %d retries", len(acked), retries.Load())
}

// streamLeader returns the name of the order stream's leader.
func streamLeader(t *testing.T, js jetstream.JetStream) string {
	t.Helper()
	var leader string
	testenv.WaitFor(t, "a stream leader", 30*time.Second, func() bool {
		st, err := js.Stream(context.Background(), StreamName)
		if err != nil {
			return false
		}
		info, err := st.Info(context.Background())
		if err != nil || info.Cluster == nil {
			return false
		}
		leader = info.Cluster.Leader
		return leader != ""
	})
	return leader
}
