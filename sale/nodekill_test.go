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
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
)

// TestMaxActiveSurvivesNodeKill: in a sale of max_active 2, node A's
// status polls admit positions 1 and 2 (two admission tokens, valid a
// minute), and node A is SIGKILLed before its next tick: whatever it kept
// in memory for Redis is lost. Node B goes on ticking. The two people
// hold valid tokens, which cannot be revoked, so for as long as they last
// nobody else may be admitted: not when B counts the two positions as
// no-shows after the grace.
//
// It failed before an admission under max_active was counted in Redis
// before its token was handed out (turnstile.Admit): B credited both as
// no-shows and admitted positions 3 and 4, four people in a checkout of
// two.
func TestMaxActiveSurvivesNodeKill(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx := context.Background()
	now := time.Now()
	cfg := event.Config{
		ID: "kill", Supply: 100, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now, EndsAt: now.Add(time.Hour),
		AdmitRatePerSecond: 1000, NoShowGraceSeconds: 2, MaxActive: 2, AdmissionTTLSeconds: 60,
	}
	cfg.Defaults()
	configs := event.NewStore(rdb)
	if _, err := configs.Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	claims := claim.NewStore(rdb)
	if err := claims.Lay(ctx, claim.SaleOf(cfg), cfg.OnSale()); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, queue.KeysFor(cfg.ID).Seq, 10, 0).Err(); err != nil {
		t.Fatal(err)
	}
	keys, err := tokens.OpenKeyDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	issuer := tokens.NewIssuer(keys, tokens.IssuerConfig{})
	nodeA := &saleRig{rdb: rdb, snaps: sale.NewSnapshots(configs, admission.NewFrontier(rdb), claims), id: cfg.ID}
	nodeB := &saleRig{rdb: rdb, snaps: sale.NewSnapshots(configs, admission.NewFrontier(rdb), claims), id: cfg.ID}

	s := nodeA.tick(t, "positions 1 and 2 to be admitted", func(s *admission.Sale) bool { return s.Frontier >= 2 })
	if s.Frontier != 2 {
		t.Fatalf("frontier %.1f, want 2 (max_active 2)", s.Frontier)
	}
	ts := turnstile.New(issuer, nodeA.snaps, nil)
	var until time.Time
	for pos := int64(1); pos <= 2; pos++ {
		_, a, err := ts.Admit(ctx, &s.Config, turnstile.Entry{Kind: turnstile.Queue, User: "u", Pos: pos}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		until = a.ExpiresAt
	}
	// Node A is killed here: it never ticks again.

	start := nodeB.tick(t, "a tick on node B", func(*admission.Sale) bool { return true })
	nodeB.tick(t, "three graces on node B", func(s *admission.Sale) bool {
		if s.Frontier > 2 && s.ServerTime.Before(until) {
			t.Fatalf("frontier %.1f (%d no-shows, %d active) while positions 1 and 2 hold tokens until %s: more than max_active 2 admitted",
				s.Frontier, s.NoShows, s.Active, until.Format(time.TimeOnly))
		}
		return s.ServerTime.Sub(start.ServerTime) >= 3*2*time.Second
	})
}
