package admission_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestFrontierLeaderless runs three independent instances (each with its own
// Redis connection) ticking the same event's frontier every 100 ms against
// one redis-server: together they admit at the configured rate, not three
// times it.
func TestFrontierLeaderless(t *testing.T) {
	r := testenv.StartRedis(t)
	setup := r.Client(t)
	ctx := context.Background()
	const rate = 200.0
	if err := setup.Set(ctx, queue.KeysFor("lead").Seq, 1_000_000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	step := admission.Step{Start: start, Rate: rate, Grace: time.Hour}

	var mu sync.Mutex
	var readings []admission.Reading
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		f := admission.NewFrontier(r.Client(t))
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				rd, err := f.Advance(ctx, "lead", step)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				readings = append(readings, rd)
				mu.Unlock()
			}
		}()
	}
	time.Sleep(5200 * time.Millisecond) // the measured interval itself, not a wait for a condition
	close(stop)
	wg.Wait()

	first, last := readings[0], readings[0]
	for _, rd := range readings {
		if rd.ServerTime.Before(first.ServerTime) {
			first = rd
		}
		if rd.ServerTime.After(last.ServerTime) {
			last = rd
		}
	}
	elapsed := last.ServerTime.Sub(first.ServerTime).Seconds()
	got := (last.Frontier - first.Frontier) / elapsed
	if elapsed < 4 || math.Abs(got-rate)/rate > 0.05 {
		t.Fatalf("admitted %.1f/s over %.2fs from %d readings of 3 instances, want %.0f/s ±5%%", got, elapsed, len(readings), rate)
	}
	t.Logf("3 instances, %d ticks: %.1f admitted/s over %.2fs (configured %.0f)", len(readings), got, elapsed, rate)
}

// TestFrontierNoShows admits a crowd of whom half never fetch their
// admission token: after a few grace periods the frontier moves past the
// no-shows so that tokens actually issued keep to the configured rate.
func TestFrontierNoShows(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	if err := r.Client(t).Set(ctx, queue.KeysFor("half").Seq, 1_000_000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	const rate = 200.0
	f := admission.NewFrontier(r.Client(t))
	step := admission.Step{Start: time.Now(), Rate: rate, Grace: 500 * time.Millisecond}
	seen := int64(0) // positions ≤ F already offered a token
	type sample struct {
		at     time.Time
		issued int64
	}
	var issued int64
	var samples []sample
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		rd, err := f.Advance(ctx, "half", step)
		if err != nil {
			t.Fatal(err)
		}
		step.Present = step.Present[:0]
		for p := seen + 1; p <= int64(rd.Frontier); p++ {
			if p%2 == 0 { // every other admitted person shows up
				step.Present = append(step.Present, p)
				issued++
			}
		}
		seen = max(seen, int64(rd.Frontier))
		samples = append(samples, sample{rd.ServerTime, issued})
		time.Sleep(50 * time.Millisecond) // the tick interval
	}
	// Steady state: after six grace periods the credit has converged.
	var from sample
	for _, s := range samples {
		if s.at.Sub(samples[0].at) >= 3*time.Second {
			from = s
			break
		}
	}
	to := samples[len(samples)-1]
	got := float64(to.issued-from.issued) / to.at.Sub(from.at).Seconds()
	if math.Abs(got-rate)/rate > 0.10 {
		t.Fatalf("tokens issued %.1f/s in steady state, want %.0f/s ±10%%", got, rate)
	}
	t.Logf("50%% no-shows: tokens issued %.1f/s (configured %.0f), frontier at %d", got, rate, seen)
}

// TestFrontierNeverPassesJoined checks that an empty queue banks no credit.
func TestFrontierNeverPassesJoined(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	rdb := r.Client(t)
	f := admission.NewFrontier(rdb)
	step := admission.Step{Start: time.Now().Add(-time.Hour), Rate: 1000, Grace: time.Hour}
	if err := rdb.Set(ctx, queue.KeysFor("few").Seq, 5, 0).Err(); err != nil {
		t.Fatal(err)
	}
	rd, err := f.Advance(ctx, "few", step)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Frontier != 5 {
		t.Fatalf("frontier %.3f with 5 joined after an hour, want 5", rd.Frontier)
	}
	if err := rdb.Set(ctx, queue.KeysFor("few").Seq, 5000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let 100 ms of Redis time pass
	rd, err = f.Advance(ctx, "few", step)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Frontier > 5+1000*0.5 {
		t.Fatalf("frontier jumped to %.1f after 5,000 joined: credit was banked", rd.Frontier)
	}
}

// TestFrontierCapHolds holds the frontier at a lottery's units however much
// time passes, and never moves it backwards.
func TestFrontierCapHolds(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	rdb := r.Client(t)
	if err := rdb.Set(ctx, queue.KeysFor("cap").Seq, 1000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	f := admission.NewFrontier(rdb)
	step := admission.Step{Start: time.Now().Add(-time.Hour), Rate: 1000, Grace: 2 * time.Hour, Lottery: true, Units: 25}
	rd, err := f.Advance(ctx, "cap", step)
	if err != nil {
		t.Fatal(err)
	}
	if rd.Frontier != 25 {
		t.Fatalf("frontier %.1f under cap 25, want 25", rd.Frontier)
	}
	step.Units = 10 // the cap fell: admitted people stay admitted
	if rd, err = f.Advance(ctx, "cap", step); err != nil || rd.Frontier != 25 {
		t.Fatalf("frontier %.1f (%v) after the cap fell, want it held at 25", rd.Frontier, err)
	}
}
