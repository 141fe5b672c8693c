package admission_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestLateNoShowLetInThenHeldAgain steps a max_active 1 frontier on a real
// redis-server. Position 1 never comes: it is credited as a no-show and
// logged held, and position 2 (present) takes the one place. Position 1's
// late request waits while 2 is active, is let in — counted back, F not
// moved, logged -1 — once 2 has used its admission, and, as 1 still does
// not come within its new grace, it is a no-show and held again.
func TestLateNoShowLetInThenHeldAgain(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	if err := rdb.Set(ctx, queue.KeysFor("held").Seq, 5, 0).Err(); err != nil {
		t.Fatal(err)
	}
	f := admission.NewFrontier(rdb)
	base := admission.Step{Start: time.Now().Add(-time.Second), Rate: 1000, Grace: 300 * time.Millisecond, MaxActive: 1, AdmissionTTL: time.Minute}
	step := func(s admission.Step) admission.Reading {
		t.Helper()
		r, err := f.Advance(ctx, "held", s)
		if err != nil {
			t.Fatal(err)
		}
		if r.HeldLen != int64(len(r.HeldLog)) {
			t.Fatalf("held log of %d, read %v from 0", r.HeldLen, r.HeldLog)
		}
		return r
	}
	until := func(what string, s admission.Step, cond func(admission.Reading) bool) admission.Reading {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			if r := step(s); cond(r) {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	s := base
	s.Present = []int64{2}
	step(s)
	r := until("position 1 a no-show", base, func(r admission.Reading) bool { return r.Frontier >= 2 })
	if r.Frontier != 2 || r.NoShows != 1 || r.Active != 1 || !slices.Equal(r.HeldLog, []int64{1}) {
		t.Fatalf("%+v: want F 2, 1 no-show held, 2 active", r)
	}
	s = base
	s.Late = []int64{1}
	if r := step(s); r.Frontier != 2 || r.NoShows != 1 || len(r.HeldLog) != 1 {
		t.Fatalf("late request with the place taken: %+v, want 1 still held", r)
	}
	s = base
	s.Claimed = []int64{2} // 2's admission is used: the place is free
	step(s)
	// Let in on the first step that has the rate's credit for it (a step in
	// the same millisecond as the last has none).
	r = until("position 1 let in", base, func(r admission.Reading) bool { return len(r.HeldLog) >= 2 })
	if r.Frontier != 2 || r.NoShows != 0 || !slices.Equal(r.HeldLog, []int64{1, -1}) {
		t.Fatalf("place free: %+v, want 1 let in (counted back, log 1 -1), F still 2", r)
	}
	r = until("position 1 held again", base, func(r admission.Reading) bool { return len(r.HeldLog) == 3 })
	if !slices.Equal(r.HeldLog, []int64{1, -1, 1}) || r.NoShows < 1 {
		t.Fatalf("%+v: want 1 held again after its new grace", r)
	}
}
