package admission_test

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestFrontierStandsStillWhileHeld admits people who never fetch a token,
// then holds admission (paused or sold out) for several grace periods:
// nobody can be admitted, so no no-show is credited and the frontier stays
// where it stopped; on resume it goes on at the configured rate.
func TestFrontierStandsStillWhileHeld(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	rdb := r.Client(t)
	if err := rdb.Set(ctx, queue.KeysFor("held").Seq, 1_000_000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	const rate = 100.0
	f := admission.NewFrontier(rdb)
	step := admission.Step{Start: time.Now(), Rate: rate, Grace: 200 * time.Millisecond}
	rd := advanceUntil(t, f, "held", step, func(rd admission.Reading) bool { return rd.Frontier >= 20 })
	step.Hold = true
	held, err := f.Advance(ctx, "held", step)
	if err != nil {
		t.Fatal(err)
	}
	if held.Frontier < rd.Frontier {
		t.Fatalf("frontier went back from %.1f to %.1f", rd.Frontier, held.Frontier)
	}
	// Hold for five grace periods of Redis time.
	rd = advanceUntil(t, f, "held", step, func(rd admission.Reading) bool {
		if rd.Frontier != held.Frontier {
			t.Fatalf("frontier moved from %.1f to %.1f (%d no-shows) while admission was held", held.Frontier, rd.Frontier, rd.NoShows)
		}
		return rd.ServerTime.Sub(held.ServerTime) >= 5*step.Grace
	})
	step.Hold = false
	resumed, err := f.Advance(ctx, "held", step)
	if err != nil {
		t.Fatal(err)
	}
	// The first advance after resume admits at most the rate times the time
	// since the last held advance (plus one for rounding): no credit was
	// saved up while held. Beside the rate, the frontier moves past the
	// no-shows that step credits: positions admitted a grace before the
	// admission clock, which the hold stopped and the resume restarts, so
	// they were due before the hold and are counted apart.
	credited := resumed.NoShows - rd.NoShows
	if most := held.Frontier + rate*resumed.ServerTime.Sub(rd.ServerTime).Seconds() + float64(credited) + 1; resumed.Frontier > most {
		t.Fatalf("frontier jumped from %.1f to %.1f on resume (%d no-shows credited), want at most %.1f", held.Frontier, resumed.Frontier, credited, most)
	}
}

// advanceUntil advances ev's frontier until cond holds (bounded).
func advanceUntil(t *testing.T, f *admission.Frontier, ev string, step admission.Step, cond func(admission.Reading) bool) admission.Reading {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rd, err := f.Advance(context.Background(), ev, step)
		if err != nil {
			t.Fatal(err)
		}
		if cond(rd) {
			return rd
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached; last reading %+v", rd)
		}
		time.Sleep(10 * time.Millisecond) // a tick
	}
}
