package claim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// TestLayForKeepsVersionOrder lays the stock of configuration version 3,
// then a late lay of version 2 arrives: it is refused as a conflict and
// the stock stays version 3's. Once units are granted, a change is laid
// as a delta (units granted stay granted), and refused when the units sold
// exceed the new share or the bucket count changes; a bucket that should
// hold stock and holds none refuses as fenced. On one redis-server and on
// a Redis Cluster.
func TestLayForKeepsVersionOrder(t *testing.T) {
	cases := map[string]func(t *testing.T) redis.UniversalClient{
		"redis-server":  func(t *testing.T) redis.UniversalClient { return testenv.StartRedis(t).Client(t) },
		"redis-cluster": func(t *testing.T) redis.UniversalClient { return testenv.StartRedisCluster(t, 3).Client(t) },
	}
	for name, client := range cases {
		t.Run(name, func(t *testing.T) { layForVersionOrder(t, NewStore(client(t))) })
	}
}

func layForVersionOrder(t *testing.T, s *Store) {
	ctx := context.Background()
	sale := Sale{ID: "order", Buckets: 2}
	left := func() int64 {
		t.Helper()
		n, err := s.Remaining(ctx, sale)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := s.LayFor(ctx, Restock{Event: "order", To: Stock{2, 30}, Version: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.LayFor(ctx, Restock{Event: "order", To: Stock{2, 10}, Version: 2}); !errors.Is(err, event.ErrConflict) {
		t.Fatalf("late lay of an older version: %v, want ErrConflict", err)
	}
	if n := left(); n != 30 {
		t.Fatalf("stock %d after a late lay of an older version, want 30", n)
	}
	out, err := s.grant(ctx, "order", 0, []request{{Event: "order", User: "u", IdemKey: "k", Pos: 1, Limit: 1,
		IdemTTL: time.Minute, ClaimTTL: time.Minute, Now: time.Now()}})
	if err != nil || out[0].code != codeGranted {
		t.Fatalf("grant: %+v %v", out, err)
	}
	if err := s.LayFor(ctx, Restock{Event: "order", From: Stock{2, 30}, To: Stock{2, 40}, Version: 4}); err != nil {
		t.Fatalf("lay over a granted unit: %v", err)
	}
	if n := left(); n != 39 {
		t.Fatalf("stock %d after 40 on sale with 1 granted, want 39", n)
	}
	for _, bad := range []Restock{
		{Event: "order", From: Stock{2, 40}, To: Stock{2, 0}, Version: 5},  // below the unit sold
		{Event: "order", From: Stock{2, 40}, To: Stock{3, 40}, Version: 5}, // a new bucket count after a grant
	} {
		if err := s.LayFor(ctx, bad); !errors.Is(err, event.ErrLocked) {
			t.Fatalf("lay %+v: %v, want ErrLocked", bad, err)
		}
		if n := left(); n != 39 {
			t.Fatalf("stock %d after a refused lay, want 39", n)
		}
	}
	if err := s.LayFor(ctx, Restock{Event: "order", From: Stock{2, 40}, To: Stock{2, 1}, Version: 5}); err != nil {
		t.Fatalf("lay of 1 unit with 1 granted: %v", err)
	}
	if n := left(); n != 0 {
		t.Fatalf("stock %d after 1 on sale with 1 granted, want 0", n)
	}
	// An event whose buckets should hold stock and hold none (its server
	// lost them): nothing is laid before a rebuild.
	if err := s.LayFor(ctx, Restock{Event: "lost", From: Stock{2, 10}, To: Stock{2, 20}, Version: 2}); !errors.Is(err, ErrNeedsRebuild) {
		t.Fatalf("lay on buckets without stock: %v, want ErrNeedsRebuild", err)
	}
}
