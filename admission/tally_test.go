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

// TestTallyCountsEachPositionOnce checks the report's wait histograms: a
// position's first token and first claim are tallied in their bucket, and
// a repeated mark (another token, a retried step) adds nothing.
func TestTallyCountsEachPositionOnce(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	rdb := r.Client(t)
	if err := rdb.Set(ctx, queue.KeysFor("tally").Seq, 10, 0).Err(); err != nil {
		t.Fatal(err)
	}
	f := admission.NewFrontier(rdb)
	step := admission.Step{Start: time.Now().Add(-time.Hour), Rate: 1000, Grace: time.Hour,
		Present: []int64{1, 2, 3}, PresentWait: []int64{0, 7, 4000},
		Claimed: []int64{1}, ClaimedWait: []int64{30},
	}
	for range 2 { // the second step repeats the marks: a retry
		if _, err := f.Advance(ctx, "tally", step); err != nil {
			t.Fatal(err)
		}
	}
	step.Present, step.PresentWait = []int64{4}, nil // wait unknown: present, not tallied
	step.Claimed, step.ClaimedWait = []int64{2}, []int64{61}
	if _, err := f.Advance(ctx, "tally", step); err != nil {
		t.Fatal(err)
	}
	got, err := f.Tally(ctx, "tally")
	if err != nil {
		t.Fatal(err)
	}
	// Bounds 1, 5, 10, 30, 60, 120, …, 3600, beyond.
	wantJ := []int64{1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}
	if !slices.Equal(got.JoinToAdmission.Counts, wantJ) || got.JoinToAdmission.Count != 3 || got.JoinToAdmission.SumSeconds != 4007 {
		t.Errorf("join to admission %+v, want counts %v, count 3, sum 4007", got.JoinToAdmission, wantJ)
	}
	wantC := []int64{0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0}
	if !slices.Equal(got.AdmissionToClaim.Counts, wantC) || got.AdmissionToClaim.Count != 2 || got.AdmissionToClaim.SumSeconds != 91 {
		t.Errorf("admission to claim %+v, want counts %v, count 2, sum 91", got.AdmissionToClaim, wantC)
	}
	if got.Present != 4 || got.Frontier < 4 {
		t.Errorf("present %d, frontier %.1f; want 4 present, frontier ≥ 4", got.Present, got.Frontier)
	}
}
