package sale_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestLaneShareHeld: a lane of share 1/4 and the default lane advance
// side by side on a real redis-server; at every reading the lane has
// admitted at most 1/4 × rate × elapsed, the default lane at most 3/4 ×
// rate × elapsed, together at most rate × elapsed — and both do advance.
func TestLaneShareHeld(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client(t)
	now := time.Now().Truncate(time.Millisecond)
	const rate, share = 40.0, 0.25
	g := newSaleRig(t, rdb, event.Config{
		ID: "share", Supply: 100, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now, EndsAt: now.Add(time.Hour),
		AdmitRatePerSecond: rate, NoShowGraceSeconds: 600, // nobody is a no-show during the test
		Lanes: []event.Lane{{Name: "members", Share: share}},
	}, 10_000)
	if err := rdb.Set(context.Background(), queue.KeysForLane("share", 1).Seq, 10_000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	const eps = 1e-6
	s := g.tick(t, "both lanes to advance", func(s *admission.Sale) bool {
		if len(s.Lanes) != 1 {
			t.Fatalf("view has %d lanes, want 1", len(s.Lanes))
		}
		el := s.Lanes[0].ServerTime.Sub(now).Seconds()
		lane, def := s.Lanes[0].Frontier, s.Frontier
		if lane > share*rate*el+eps || def > (1-share)*rate*s.ServerTime.Sub(now).Seconds()+eps || lane+def > rate*el+eps {
			t.Fatalf("after %.3fs: lane %.3f (share %.1f), default %.3f, at rate %.0f", el, lane, share*rate*el, def, rate)
		}
		return lane >= 10 && def >= 30
	})
	el := s.Lanes[0].ServerTime.Sub(now).Seconds()
	t.Logf("after %.3fs: lane %.2f admitted (bound %.2f), default %.2f (bound %.2f), total bound %.2f",
		el, s.Lanes[0].Frontier, share*rate*el, s.Frontier, (1-share)*rate*el, rate*el)
}

// TestLaneEarlyStart: a lane starting an hour before the sale admits its
// members while the default lane, whose window is still open, admits
// nobody; status answers lane members with their place in the lane.
func TestLaneEarlyStart(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client(t)
	now := time.Now()
	early := now.Add(-time.Second)
	g := newSaleRig(t, rdb, event.Config{
		ID: "early", Supply: 100, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour),
		AdmitRatePerSecond: 100, NoShowGraceSeconds: 600,
		Lanes: []event.Lane{{Name: "members", Share: 0.2, StartsAt: &early}},
	}, 50)
	if err := rdb.Set(context.Background(), queue.KeysForLane("early", 1).Seq, 50, 0).Err(); err != nil {
		t.Fatal(err)
	}
	s := g.tick(t, "the lane to admit five", func(s *admission.Sale) bool {
		if s.Frontier != 0 {
			t.Fatalf("the default lane admitted %.1f before the sale started", s.Frontier)
		}
		return s.Lanes[0].Frontier >= 5
	})
	if w := s.Lanes[0].Window; !s.Lanes[0].WindowFrozen || w != 50 {
		t.Fatalf("lane window %d (frozen %v), want 50 frozen at the lane's start", w, s.Lanes[0].WindowFrozen)
	}
	admitted := 0
	for n := int64(1); n <= 50; n++ {
		d := admission.Decide(s, queue.Laned(1, n), now, rand.Float64)
		if d.Lane != 1 || d.Position < 1 || d.Position > 50 {
			t.Fatalf("lane member %d: %+v", n, d)
		}
		if d.State == admission.Admitted {
			admitted++
		}
	}
	if f := int(math.Floor(s.Lanes[0].Frontier)); admitted != f {
		t.Errorf("%d lane members admitted, want the lane frontier %d", admitted, f)
	}
	if d := admission.Decide(s, 1, now, rand.Float64); d.State != admission.Prequeue || d.Lane != 0 {
		t.Errorf("a default joiner: %+v, want prequeue", d)
	}
}

// TestLaneNoShowsAndPresence: presence marks of lane members reach the
// lane's own bitmap, and the lane credits its own no-shows; the default
// lane, with nobody in it, neither admits nor credits anyone.
func TestLaneNoShowsAndPresence(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client(t)
	now := time.Now()
	g := newSaleRig(t, rdb, event.Config{
		ID: "ns", Supply: 100, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now, EndsAt: now.Add(time.Hour),
		AdmitRatePerSecond: 40, NoShowGraceSeconds: 2,
		Lanes: []event.Lane{{Name: "members", Share: 0.5}},
	}, 0)
	ctx := context.Background()
	if err := rdb.Set(ctx, queue.KeysForLane("ns", 1).Seq, 1000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	g.tick(t, "the lane to admit", func(s *admission.Sale) bool { return s.Lanes[0].Frontier >= 1 })
	g.snaps.Present("ns", queue.Laned(1, 1))
	s := g.tick(t, "the lane's no-shows", func(s *admission.Sale) bool { return s.Lanes[0].NoShows >= 1 })
	if s.Frontier != 0 || s.NoShows != 0 {
		t.Errorf("the empty default lane: frontier %.1f, no-shows %d", s.Frontier, s.NoShows)
	}
	if bit, _ := rdb.GetBit(ctx, queue.LaneTag("ns", 1)+"present", 1).Result(); bit != 1 {
		t.Error("lane position 1 was not marked present in the lane's bitmap")
	}
	if n, _ := rdb.Exists(ctx, "ar:{ns}:present").Result(); n != 0 {
		t.Error("a lane member's presence reached the default lane's bitmap")
	}
	if got := s.Lanes[0].NoShows; float64(got) > s.Lanes[0].Frontier-1 {
		t.Errorf("%d no-shows of %.1f admitted: the present member was counted", got, s.Lanes[0].Frontier)
	}
}
