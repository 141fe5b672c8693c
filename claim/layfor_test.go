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
// then a late lay of version 2 arrives: the stock stays version 3's. Once
// units are granted the stock is live and is never laid again. On one
// redis-server and on a Redis Cluster.
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
	start := time.Now().Add(time.Hour)
	if err := s.LayFor(ctx, Sale{ID: "order", Buckets: 2}, 30, 3, start); err != nil {
		t.Fatal(err)
	}
	if err := s.LayFor(ctx, Sale{ID: "order", Buckets: 2}, 10, 2, start); err != nil {
		t.Fatal(err)
	}
	if left, err := s.Remaining(ctx, Sale{ID: "order", Buckets: 2}); err != nil || left != 30 {
		t.Fatalf("stock %d (%v) after a late lay of an older version, want 30", left, err)
	}
	out, err := s.grant(ctx, "order", 0, []request{{Event: "order", User: "u", IdemKey: "k", Pos: 1, Limit: 1,
		IdemTTL: time.Minute, ClaimTTL: time.Minute, Now: time.Now()}})
	if err != nil || out[0].code != codeGranted {
		t.Fatalf("grant: %+v %v", out, err)
	}
	if err := s.LayFor(ctx, Sale{ID: "order", Buckets: 2}, 40, 4, start); !errors.Is(err, event.ErrLocked) {
		t.Fatalf("lay over granted units: %v, want ErrLocked", err)
	}
	if left, _ := s.Remaining(ctx, Sale{ID: "order", Buckets: 2}); left != 29 {
		t.Fatalf("stock %d after a refused lay, want 29", left)
	}
}
