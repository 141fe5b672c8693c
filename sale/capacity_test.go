package sale_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// TestCheckoutCapacityFinishedSessions keeps at most two people in
// checkout on a real redis-server. The shop finishing a session by its
// token's jti admits the next person; an unknown jti changes nothing; a
// replay changes nothing; a new token for a finished position does not
// make it active again; and however many sessions finish at once, the
// frontier never moves faster than the rate. Also on a Redis Cluster: every
// key of a session shares the sale's slot.
func TestCheckoutCapacityFinishedSessions(t *testing.T) {
	cases := map[string]func(t *testing.T) redis.UniversalClient{
		"redis-server":  func(t *testing.T) redis.UniversalClient { return testenv.StartRedis(t).Client(t) },
		"redis-cluster": func(t *testing.T) redis.UniversalClient { return testenv.StartRedisCluster(t, 3).Client(t) },
	}
	for name, client := range cases {
		t.Run(name, func(t *testing.T) { checkoutCapacity(t, client(t)) })
	}
}

func checkoutCapacity(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	now := time.Now()
	const rate = 4.0
	g := newSaleRig(t, rdb, event.Config{
		ID: "checkout", Supply: 100, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now,
		EndsAt: now.Add(time.Hour), AdmitRatePerSecond: rate, NoShowGraceSeconds: 60,
		MaxActive: 2, AdmissionTTLSeconds: 60,
	}, 50)
	f := admission.NewFrontier(rdb)
	var prev *admission.Sale
	// atRate fails when the frontier moved faster than the rate between
	// two readings (no-shows aside: there are none, everyone is present).
	atRate := func(s *admission.Sale) {
		if prev != nil && s.Frontier > prev.Frontier+rate*s.ServerTime.Sub(prev.ServerTime).Seconds()+0.01 { // ms clock, F in thousandths
			t.Fatalf("frontier %.3f -> %.3f in %v: faster than %.0f a second", prev.Frontier, s.Frontier, s.ServerTime.Sub(prev.ServerTime), rate)
		}
		prev = s
	}
	capped := func(want float64, d time.Duration) {
		t.Helper()
		start := g.tick(t, "a tick", func(*admission.Sale) bool { return true })
		g.tick(t, "a few ticks", func(s *admission.Sale) bool {
			atRate(s)
			if s.Frontier != want || s.Active != 2 {
				t.Fatalf("frontier %.2f, active %d: want %.0f and 2 in checkout", s.Frontier, s.Active, want)
			}
			return s.ServerTime.Sub(start.ServerTime) >= d
		})
	}
	present := func(jti string, pos int64) {
		g.snaps.Present("checkout", pos)
		g.snaps.Session("checkout", jti, pos)
	}
	g.tick(t, "two admitted", func(s *admission.Sale) bool { atRate(s); return s.Frontier >= 2 })
	present("jti-1", 1)
	present("jti-2", 2)
	capped(2, 600*time.Millisecond)

	if _, err := f.Finish(ctx, "checkout", "no-such-jti"); !errors.Is(err, admission.ErrUnknownSession) {
		t.Fatalf("unknown jti: %v, want ErrUnknownSession", err)
	}
	if _, err := f.Finish(ctx, "other", "jti-1"); !errors.Is(err, admission.ErrUnknownSession) {
		t.Fatalf("jti of another sale: %v, want ErrUnknownSession", err)
	}
	capped(2, 300*time.Millisecond)

	fin, err := f.Finish(ctx, "checkout", "jti-1")
	if err != nil || fin.Position != 1 || fin.Replay {
		t.Fatalf("finish jti-1: %+v %v, want position 1, first time", fin, err)
	}
	g.tick(t, "position 3 admitted", func(s *admission.Sale) bool { atRate(s); return s.Frontier >= 3 })
	present("jti-3", 3)
	present("jti-1b", 1) // a later token of the finished position
	if fin, err := f.Finish(ctx, "checkout", "jti-1"); err != nil || !fin.Replay {
		t.Fatalf("replay: %+v %v, want replay", fin, err)
	}
	capped(3, 600*time.Millisecond)

	// Everyone in checkout finishes at once, again and again: the frontier
	// follows at the rate, never a burst.
	for pos := int64(2); pos <= 8; pos++ {
		if _, err := f.Finish(ctx, "checkout", jtiOf(pos)); err != nil {
			t.Fatal(err)
		}
		s := g.tick(t, "the next admitted", func(s *admission.Sale) bool { atRate(s); return s.Frontier >= float64(pos+2) })
		if s.Active > 2 {
			t.Fatalf("%d in checkout, max_active 2", s.Active)
		}
		present(jtiOf(pos+2), pos+2)
	}
}

func jtiOf(pos int64) string {
	if pos <= 3 {
		return [...]string{"", "jti-1", "jti-2", "jti-3"}[pos]
	}
	return "jti-" + string(rune('a'+pos))
}

// TestFinishKnowsDefaultLaneOnly: max_active caps the default lane, so only
// its sessions can be finished. A lane member's token (pos = lane×2^40+n)
// or a bypass pass's (pos = PassPosition) is not recorded as a session:
// finishing it is an unknown session, never a position far outside the
// finished bitmap (Redis refuses a bit offset above 2^32, which answered
// the shop 500).
func TestFinishKnowsDefaultLaneOnly(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	now := time.Now()
	g := newSaleRig(t, rdb, event.Config{
		ID: "lanes", Supply: 100, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now,
		EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 100, MaxActive: 2, AdmissionTTLSeconds: 60,
	}, 5)
	g.snaps.Session("lanes", "jti-lane", queue.Laned(1, 3))
	g.snaps.Session("lanes", "jti-pass", admission.PassPosition)
	g.snaps.Session("lanes", "jti-default", 1)
	g.tick(t, "the sessions recorded", func(*admission.Sale) bool { return true })
	f := admission.NewFrontier(rdb)
	for _, jti := range []string{"jti-lane", "jti-pass"} {
		if _, err := f.Finish(ctx, "lanes", jti); !errors.Is(err, admission.ErrUnknownSession) {
			t.Errorf("finish %s: %v, want ErrUnknownSession", jti, err)
		}
	}
	if fin, err := f.Finish(ctx, "lanes", "jti-default"); err != nil || fin.Position != 1 {
		t.Errorf("finish of the default lane's session: %+v, %v", fin, err)
	}
}
