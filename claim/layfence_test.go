package claim

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestLayKeepsTheFence: an early claim (an early lane or a pass holder,
// before the start) is granted on the primary and reaches the stream but
// not the replica; the replica is promoted and the fence refuses claims.
// Staff then save a change before the start: laying the stock must not
// adopt the new server as the epoch nor count stock on it (it lost the
// grant). Claims stay refused until the rebuild, and over the whole sale
// no more units are granted than are on sale.
func TestLayKeepsTheFence(t *testing.T) {
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	ns := testenv.StartNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := newEnv(t, primary.Client(t), ns.URL(), 1)
	now := time.Now().UTC()
	cfg := event.Config{ID: "early", Name: "early", Supply: 2, PerUserLimit: 1, ClaimTTLSeconds: 3600,
		StartsAt: now.Add(time.Hour), EndsAt: now.Add(2 * time.Hour), Buckets: 1}
	cfg.Defaults()
	configs := event.NewStore(old.rdb)
	saved, err := configs.Put(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.store.LayFor(ctx, Restock{Event: saved.ID, To: Stock{Buckets: 1, Units: saved.OnSale()}, Version: saved.Version}); err != nil {
		t.Fatal(err)
	}
	promoted := NewStore(replica.Client(t))
	testenv.WaitFor(t, "the replica to hold the laid stock", 10*time.Second, func() bool {
		left, err := promoted.Remaining(ctx, SaleOf(saved))
		return err == nil && left == saved.OnSale()
	})
	if err := replica.Client(t).Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	claim := func(e *env, user string) (Result, error) {
		return e.svc.Claim(ctx, Request{Event: cfg.ID, User: user, IdemKey: "k", Limit: 1, Buckets: 1})
	}
	granted := 0
	if _, err := claim(old, "early"); err != nil {
		t.Fatalf("early claim on the primary: %v", err)
	}
	granted++
	primary.Kill(t)

	e := newEnv(t, replica.Client(t), ns.URL(), 1)
	if _, err := claim(e, "a"); !errors.Is(err, ErrNeedsRebuild) {
		t.Fatalf("claim on the promoted replica: %v, want ErrNeedsRebuild", err)
	}
	// Staff save a change before the start: the new version's stock.
	next := saved
	next.Name = "renamed"
	stored, err := event.NewStore(e.rdb).Put(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.LayFor(ctx, Restock{Event: stored.ID, From: Stock{Buckets: 1, Units: saved.OnSale()}, To: Stock{Buckets: 1, Units: stored.OnSale()}, Version: stored.Version}); !errors.Is(err, ErrNeedsRebuild) {
		t.Errorf("lay on the promoted replica: %v, want ErrNeedsRebuild", err)
	}
	for i := range 3 {
		_, err := claim(e, fmt.Sprint("late", i))
		if err == nil {
			granted++
			continue
		}
		if !errors.Is(err, ErrNeedsRebuild) {
			t.Errorf("claim after the save, before the rebuild: %v, want ErrNeedsRebuild", err)
		}
	}
	if granted > int(cfg.OnSale()) {
		t.Fatalf("%d claims acknowledged for %d units", granted, cfg.OnSale())
	}
	// The rebuild counts the early grant from the stream: one unit is left.
	if _, err := NewRebuilder(e.svc, e.js, event.NewStore(e.rdb)).Rebuild(ctx, cfg.ID); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := claim(e, fmt.Sprint("after", i)); err == nil {
			granted++
		} else if !errors.Is(err, ErrSoldOut) {
			t.Fatalf("claim after the rebuild: %v", err)
		}
	}
	if granted != int(cfg.OnSale()) {
		t.Errorf("%d claims acknowledged over the sale, want %d", granted, cfg.OnSale())
	}
}
