package sale_test

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/sale"
	"github.com/redis/go-redis/v9"
)

// saleRig is one event on a real redis-server with the stores a node uses,
// driven tick by tick.
type saleRig struct {
	rdb   redis.UniversalClient
	snaps *sale.Snapshots
	id    string
}

func newSaleRig(t *testing.T, rdb redis.UniversalClient, cfg event.Config, joined int64) *saleRig {
	t.Helper()
	ctx := context.Background()
	cfg.Defaults()
	configs := event.NewStore(rdb)
	if _, err := configs.Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	claims := claim.NewStore(rdb)
	if err := claims.Lay(ctx, claim.SaleOf(cfg), cfg.OnSale()); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, queue.KeysFor(cfg.ID).Seq, joined, 0).Err(); err != nil {
		t.Fatal(err)
	}
	return &saleRig{rdb: rdb, snaps: sale.NewSnapshots(configs, admission.NewFrontier(rdb), claims), id: cfg.ID}
}

// tick refreshes the view until cond holds (bounded) and returns it.
func (g *saleRig) tick(t *testing.T, what string, cond func(*admission.Sale) bool) *admission.Sale {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := g.snaps.StepOne(context.Background(), g.id); err != nil {
			t.Fatal(err)
		}
		s, _ := g.snaps.Get(g.id)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; frontier %.1f, no-shows %d", what, s.Frontier, s.NoShows)
		}
		time.Sleep(20 * time.Millisecond) // a tick
	}
}

// TestLotteryLateShowCountedBack draws two winners for two units. Position
// 1 is late: it is credited as a no-show and position 3 is admitted in its
// place; then position 1 fetches its token after all. It must be counted
// back, so that when position 3 turns out absent too, position 4 is not
// admitted: three people would race for two units.
func TestLotteryLateShowCountedBack(t *testing.T) {
	r := testenv.StartRedis(t)
	now := time.Now()
	g := newSaleRig(t, r.Client(t), event.Config{
		ID: "late", Supply: 2, Mode: event.Lottery, PrequeueOpensAt: now.Add(-time.Hour),
		StartsAt: now, EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 1000, NoShowGraceSeconds: 1,
	}, 10)
	g.tick(t, "the draw to admit two", func(s *admission.Sale) bool { return s.Frontier >= 2 })
	g.snaps.Present("late", 2)
	g.tick(t, "position 1 to be a no-show", func(s *admission.Sale) bool { return s.Frontier >= 3 })
	g.snaps.Present("late", 1) // late, but it came
	start := g.tick(t, "position 1 to be marked", func(*admission.Sale) bool { return true })
	g.tick(t, "three grace periods", func(s *admission.Sale) bool {
		if s.Frontier > 3 {
			t.Fatalf("frontier %.0f (%d no-shows): position 4 admitted while positions 1 and 2 hold the two units", s.Frontier, s.NoShows)
		}
		return s.ServerTime.Sub(start.ServerTime) >= 3*time.Second
	})
}

// TestMaxActiveCapsPeople caps active people at 2, on one redis-server and
// on a Redis Cluster: admitted people count until they fetch a token or are
// found absent, present ones until their admission expires or is used by a
// claim.
func TestMaxActiveCapsPeople(t *testing.T) {
	cases := map[string]func(t *testing.T) redis.UniversalClient{
		"redis-server":  func(t *testing.T) redis.UniversalClient { return testenv.StartRedis(t).Client(t) },
		"redis-cluster": func(t *testing.T) redis.UniversalClient { return testenv.StartRedisCluster(t, 3).Client(t) },
	}
	for name, client := range cases {
		t.Run(name, func(t *testing.T) {
			now := time.Now()
			g := newSaleRig(t, client(t), event.Config{
				ID: "active", Supply: 100, Buckets: 4, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now,
				EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 1000, NoShowGraceSeconds: 60,
				MaxActive: 2, AdmissionTTLSeconds: 1,
			}, 10)
			first := g.tick(t, "two admitted", func(s *admission.Sale) bool { return s.Frontier >= 2 })
			g.snaps.Present("active", 1)
			g.snaps.Present("active", 2)
			g.tick(t, "a few ticks", func(s *admission.Sale) bool {
				if s.Frontier != 2 {
					t.Fatalf("frontier %.1f, active %d: want 2 while two are admitted and present", s.Frontier, s.Active)
				}
				return s.ServerTime.Sub(first.ServerTime) >= 200*time.Millisecond
			})
			g.snaps.Claimed("active", 1) // position 1's admission is used
			g.tick(t, "position 3 admitted", func(s *admission.Sale) bool { return s.Frontier >= 3 })
			g.snaps.Present("active", 3)
			s := g.tick(t, "the admissions of 2 and 3 to expire", func(s *admission.Sale) bool { return s.Frontier >= 5 })
			if s.Frontier != 5 {
				t.Fatalf("frontier %.1f after two admissions expired, want 5", s.Frontier)
			}
		})
	}
}
