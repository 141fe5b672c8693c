package sale_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestEarlyLaneRevealsNoDefaultPositions: an early lane's window closed,
// the default window is open for an hour. The lane's members see their
// positions (status, admission tokens) now; those must say nothing about
// the positions the default window will draw — else anyone who gathers
// lane members' (number, position) pairs learns which default sequence
// numbers draw the front, and times a join against the public joined
// count. With a 50-member lane and a default window of 60 (the same
// Feistel width), independent draws agree on about one number in 50.
func TestEarlyLaneRevealsNoDefaultPositions(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	rdb := r.Client(t)
	now := time.Now()
	early := now.Add(-time.Second)
	g := newSaleRig(t, rdb, event.Config{ID: "early", Supply: 10, PrequeueOpensAt: now.Add(-time.Minute), StartsAt: now.Add(time.Hour),
		Lanes: []event.Lane{{Name: "members", Share: 0.2, StartsAt: &early}}}, 0)
	const laneW, defaultW = 50, 60
	if err := rdb.Set(ctx, queue.KeysForLane("early", 1).Seq, laneW, 0).Err(); err != nil {
		t.Fatal(err)
	}
	s := g.tick(t, "the lane's window to freeze", func(s *admission.Sale) bool {
		return len(s.Lanes) == 1 && s.Lanes[0].WindowFrozen
	})
	if s.WindowFrozen {
		t.Fatal("the default window froze an hour early")
	}
	seed, err := queue.ParseSeedHex(s.Config.Seed)
	if err != nil {
		t.Fatal(err)
	}
	// The default window's draw, as docs/verify.md defines it (π over 1..W
	// keyed by the event's seed), once it closes with W = 60.
	later, err := queue.NewPermutation(seed, defaultW)
	if err != nil {
		t.Fatal(err)
	}
	same := 0
	for n := int64(1); n <= laneW; n++ {
		d := admission.DecidePlace(s, queue.Place{Seq: queue.Laned(1, n)}, time.Now(), rand.Float64)
		if d.Position < 1 || d.Position > laneW {
			t.Fatalf("lane number %d: %+v", n, d)
		}
		if d.Position == later.Apply(n) {
			same++
		}
	}
	if same > 10 {
		t.Fatalf("%d of %d lane members' positions equal the default window's draw for the same sequence number: the lane's status reveals the default window while it is open", same, laneW)
	}
}
