package claim

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// TestLive grants pending claims in several buckets, confirms one and
// releases another, and reads what the admission frontier needs: stock per
// bucket, units released, and the positions still holding a pending claim —
// on one redis-server and on a Redis Cluster (each bucket on its own slot).
func TestLive(t *testing.T) {
	cases := map[string]func(t *testing.T) redis.UniversalClient{
		"redis-server":  func(t *testing.T) redis.UniversalClient { return testenv.StartRedis(t).Client(t) },
		"redis-cluster": func(t *testing.T) redis.UniversalClient { return testenv.StartRedisCluster(t, 3).Client(t) },
	}
	for name, client := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := NewStore(client(t))
			const ev, buckets = "live", 4
			sale := Sale{ID: ev, Buckets: buckets}
			if err := s.Lay(ctx, sale, 40); err != nil {
				t.Fatal(err)
			}
			ids := map[int64]string{}
			users := map[int64]string{}
			for pos := int64(1); pos <= 6; pos++ {
				u := fmt.Sprint("u", pos)
				b := HomeBucket(u, buckets)
				out, err := s.grant(ctx, ev, b, []request{{Event: ev, User: u, IdemKey: "k", Pos: pos, Limit: 1,
					IdemTTL: time.Minute, ClaimTTL: time.Minute, Now: time.Now()}})
				if err != nil || out[0].code != codeGranted {
					t.Fatalf("grant %d: %+v %v", pos, out, err)
				}
				ids[pos], users[pos] = out[0].claimID, u
			}
			if _, err := s.Confirm(ctx, ev, ids[2]); err != nil {
				t.Fatal(err)
			}
			b := HomeBucket(users[5], buckets)
			if out, err := s.release(ctx, ev, b, "user", time.Now(), []string{ids[5]}, []string{users[5]}); err != nil || out[0].code != 0 {
				t.Fatalf("release: %+v %v", out, err)
			}
			l, err := s.Live(ctx, sale, true)
			if err != nil {
				t.Fatal(err)
			}
			var left int64
			for _, n := range l.Stock {
				left += n
			}
			slices.SortFunc(l.Pending, func(a, b Holder) int { return int(a.Pos - b.Pos) })
			want := []Holder{{1, "u1"}, {3, "u3"}, {4, "u4"}, {6, "u6"}}
			if left != 35 || l.Released != 1 || !slices.Equal(l.Pending, want) {
				t.Fatalf("stock %v (sum %d), released %d, pending %v; want 35, 1, %v", l.Stock, left, l.Released, l.Pending, want)
			}
			if l, err = s.Live(ctx, sale, false); err != nil || l.Pending != nil {
				t.Fatalf("without pending: %v %v", l.Pending, err)
			}
		})
	}
}
