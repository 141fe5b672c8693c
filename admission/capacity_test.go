package admission_test

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestMaxActiveCountsOtherLanesClaims: with max_active, a pending claim of
// a lane member (pos = lane×2^40+n) or of a bypass pass (PassPosition)
// counts as one person in checkout, like any pending claim; the default
// lane's step never looks such a position up in its own bitmaps (Redis
// refuses a bit offset above 2^32, which failed every step of the sale
// while the claim was pending, and the frontier stood still).
func TestMaxActiveCountsOtherLanesClaims(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	if err := rdb.Set(ctx, queue.KeysFor("mixed").Seq, 10, 0).Err(); err != nil {
		t.Fatal(err)
	}
	f := admission.NewFrontier(rdb)
	step := admission.Step{
		Start: time.Now().Add(-time.Second), Rate: 100, Grace: time.Minute, MaxActive: 3, AdmissionTTL: time.Minute,
		Pending: []admission.Holder{{Pos: queue.Laned(1, 2), User: "lane-member"}, {Pos: admission.PassPosition, User: "pass-holder"}},
	}
	r, err := f.Advance(ctx, "mixed", step)
	if err != nil {
		t.Fatalf("advance with other lanes' pending claims: %v", err)
	}
	if r.Active != 2 || r.Frontier != 1 {
		t.Errorf("active %d, frontier %.0f: want the 2 pending claims in checkout and 1 more admitted (max_active 3)", r.Active, r.Frontier)
	}
}
