package admission_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// TestFrontierNoCatchUpBurst: after a gap in which no step ran (Redis
// unreachable or paused, every node stopped), the next step credits at most
// one step's worth of time, not rate × the gap at one instant. The gap is
// made by moving the stored last-advance instant 10 s back, as if no node
// had reached Redis for 10 s; the admission clock moves by what was
// credited, no more.
func TestFrontierNoCatchUpBurst(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	rdb := r.Client(t)
	if err := rdb.Set(ctx, queue.KeysFor("gap").Seq, 1_000_000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	const rate = 100.0
	f := admission.NewFrontier(rdb)
	// The window closed a minute ago, so the gap below (10 s) lies after
	// it: before the start there is no advance to make up.
	step := admission.Step{Start: time.Now().Add(-time.Minute), Rate: rate, Grace: time.Hour}
	before, err := f.Advance(ctx, "gap", step)
	if err != nil {
		t.Fatal(err)
	}
	const key = "ar:{gap}:adm" // admission/frontier.go's frontierKey
	if err := rdb.HIncrBy(ctx, key, "t", -10_000).Err(); err != nil {
		t.Fatal(err)
	}
	a0 := hashInt(t, rdb, key, "a")
	after, err := f.Advance(ctx, "gap", step)
	if err != nil {
		t.Fatal(err)
	}
	most := admission.DefaultMaxCredit
	if jump := after.Frontier - before.Frontier; jump > rate*most.Seconds()+1e-6 {
		t.Fatalf("frontier jumped %.1f → %.1f (+%.1f) in one step after a 10 s gap: more than rate %.0f/s × %s", before.Frontier, after.Frontier, jump, rate, most)
	}
	if da := hashInt(t, rdb, key, "a") - a0; da > most.Milliseconds() {
		t.Fatalf("admission clock moved %d ms in one step, credited at most %d", da, most.Milliseconds())
	}
	// The gap is not made up later either: the next step credits only the
	// time since this one.
	next, err := f.Advance(ctx, "gap", step)
	if err != nil {
		t.Fatal(err)
	}
	if jump := next.Frontier - after.Frontier; jump > rate*next.ServerTime.Sub(after.ServerTime).Seconds()+1e-6 {
		t.Fatalf("frontier +%.1f in %s after the capped step: the gap was banked", jump, next.ServerTime.Sub(after.ServerTime))
	}
}

// TestFrontierFirstStepCapped: the first step of a sale whose window closed
// long ago (no node ticked since) credits one step, not rate × the time
// since the window closed.
func TestFrontierFirstStepCapped(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	rdb := r.Client(t)
	if err := rdb.Set(ctx, queue.KeysFor("late").Seq, 1_000_000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	const rate = 100.0
	f := admission.NewFrontier(rdb)
	rd, err := f.Advance(ctx, "late", admission.Step{Start: time.Now().Add(-time.Minute), Rate: rate, Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if most := rate * admission.DefaultMaxCredit.Seconds(); rd.Frontier > most+1e-6 {
		t.Fatalf("first step a minute after the window closed admitted %.1f, want at most %.0f", rd.Frontier, most)
	}
}

func hashInt(t *testing.T, rdb redis.UniversalClient, key, field string) int64 {
	t.Helper()
	s, err := rdb.HGet(context.Background(), key, field).Result()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s %s = %q: %v", key, field, s, err)
	}
	return n
}
