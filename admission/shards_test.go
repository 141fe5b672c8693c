package admission_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestFrontierLeaderlessSharded is TestFrontierLeaderless for a queue of 16
// join shards on a 3-master Redis Cluster: three instances, each reading
// every shard into its own Order and ticking every 100 ms, together admit
// at the configured rate, and the frontier never passes who joined.
func TestFrontierLeaderlessSharded(t *testing.T) {
	rc := testenv.StartRedisCluster(t, 3)
	ctx := context.Background()
	const rate, joiners = 200.0, 2000
	now := time.Now()
	// Everyone joins inside a window that ends an hour away; once they all
	// have, the window is moved to close two seconds later (every join is
	// still before it), however long the joins took on loaded cores.
	cfg := &event.Config{ID: "spread", JoinShards: 16, PrequeueOpensAt: now.Add(-time.Minute),
		StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour)}
	j := queue.NewJoiner(rc.Client(t))
	times := queue.Times{Opens: cfg.PrequeueOpensAt, WindowEnd: cfg.WindowEnd(), JoinEnd: cfg.JoinEnd(), Shards: cfg.JoinShards}
	for i := range joiners {
		if _, err := j.Join(ctx, cfg.ID, fmt.Sprint("u", i), times); err != nil {
			t.Fatal(err)
		}
	}
	cfg.StartsAt = time.Now().Add(2 * time.Second)
	step := admission.Step{Start: cfg.WindowEnd(), Rate: rate, Grace: time.Hour}

	var mu sync.Mutex
	var readings []admission.Reading
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		f := admission.NewFrontier(rc.Client(t))
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			var order *queue.Order
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				var err error
				if order, err = f.ReadOrder(ctx, cfg.ID, cfg, time.Time{}, order); err != nil {
					t.Error(err)
					return
				}
				s := step
				s.Order = order
				rd, err := f.Advance(ctx, cfg.ID, s)
				if err != nil {
					t.Error(err)
					return
				}
				if rd.Frontier > float64(order.Settled()) {
					t.Errorf("frontier %.1f passed the %d settled", rd.Frontier, order.Settled())
				}
				mu.Lock()
				if rd.Frontier > 0 {
					readings = append(readings, rd)
				}
				mu.Unlock()
			}
		}()
	}
	// The window closes after two seconds; then the measured interval itself.
	time.Sleep(time.Until(cfg.WindowEnd()) + 5200*time.Millisecond)
	close(stop)
	wg.Wait()
	if len(readings) < 2 {
		t.Fatalf("%d readings with a frontier", len(readings))
	}
	first, last := readings[0], readings[0]
	for _, rd := range readings {
		if rd.ServerTime.Before(first.ServerTime) {
			first = rd
		}
		if rd.ServerTime.After(last.ServerTime) {
			last = rd
		}
		if !rd.WindowFrozen || rd.Window != joiners {
			t.Fatalf("reading %+v: want W = %d", rd, joiners)
		}
	}
	elapsed := last.ServerTime.Sub(first.ServerTime).Seconds()
	got := (last.Frontier - first.Frontier) / elapsed
	if elapsed < 4 || math.Abs(got-rate)/rate > 0.05 {
		t.Fatalf("admitted %.1f/s over %.2fs from %d readings of 3 instances, want %.0f/s ±5%%", got, elapsed, len(readings), rate)
	}
	t.Logf("16 shards, 3 instances, %d ticks: %.1f admitted/s over %.2fs (configured %.0f)", len(readings), got, elapsed, rate)
}
