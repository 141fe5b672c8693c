package admission_test

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestFrontierStartMovedEarlier: staff move the start an hour earlier after
// nodes have stepped the frontier before it. From the new start the
// frontier advances at the rate; it does not wait for the old start (the
// last-advance instant written before the start is no advance at all).
func TestFrontierStartMovedEarlier(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	rdb := r.Client(t)
	if err := rdb.Set(ctx, queue.KeysFor("earlier").Seq, 1_000_000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	f := admission.NewFrontier(rdb)
	const rate = 1000.0
	old := time.Now().Add(time.Hour)
	if _, err := f.Advance(ctx, "earlier", admission.Step{Start: old, Rate: rate, Grace: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// The new start has passed; every step after it credits its time. At
	// 1000/s the first step that follows a step after the start admits
	// someone: poll until then, for far less than the hour the old start
	// is away.
	moved := admission.Step{Start: time.Now().Add(-time.Millisecond), Rate: rate, Grace: time.Hour}
	deadline := time.Now().Add(20 * time.Second)
	var rd admission.Reading
	for time.Now().Before(deadline) {
		var err error
		if rd, err = f.Advance(ctx, "earlier", moved); err != nil {
			t.Fatal(err)
		}
		if rd.Frontier >= 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("start moved an hour earlier: frontier still %.3f 20 s after the new start (at %s, old start %s)", rd.Frontier, rd.ServerTime.UTC().Format(time.RFC3339Nano), old.UTC().Format(time.RFC3339Nano))
}

// TestFrontierStartMovedLater: staff move the start later after nodes have
// stepped the frontier before the old start. The first step after the new
// start credits only the time since the new start, not one catch-up step
// counted from the old start.
func TestFrontierStartMovedLater(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	rdb := r.Client(t)
	if err := rdb.Set(ctx, queue.KeysFor("later").Seq, 1_000_000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	f := admission.NewFrontier(rdb)
	const rate = 1000.0
	// The first step must run before the old start: the lead grows tenfold
	// until this machine makes it (300 ms, 3 s, 30 s), never a skip.
	var old, moved time.Time
	var rd admission.Reading
	for lead := 300 * time.Millisecond; ; lead *= 10 {
		now := time.Now()
		// Whole milliseconds, as the script reads the start.
		old, moved = time.UnixMilli(now.Add(lead).UnixMilli()), time.UnixMilli(now.Add(lead+time.Second).UnixMilli())
		if err := rdb.Del(ctx, "ar:{later}:adm").Err(); err != nil { // admission/frontier.go's frontierKey
			t.Fatal(err)
		}
		var err error
		if rd, err = f.Advance(ctx, "later", admission.Step{Start: old, Rate: rate, Grace: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if rd.ServerTime.Before(old) {
			break
		}
		if lead >= 30*time.Second {
			t.Fatalf("the step meant to run before the old start ran at %s, %s after it, with a lead of %s", rd.ServerTime, rd.ServerTime.Sub(old), lead)
		}
	}
	step := admission.Step{Start: moved, Rate: rate, Grace: time.Hour}
	deadline := moved.Add(time.Minute)
	for time.Now().Before(deadline) {
		var err error
		if rd, err = f.Advance(ctx, "later", step); err != nil {
			t.Fatal(err)
		}
		if !rd.ServerTime.Before(moved) {
			// The first step at or after the new start.
			if most := rate * rd.ServerTime.Sub(moved).Seconds(); rd.Frontier > most+1e-6 {
				t.Fatalf("first step %s after the start moved later admitted %.1f, at most %.1f is owed since the new start", rd.ServerTime.Sub(moved), rd.Frontier, most)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("Redis TIME never reached the new start")
}
