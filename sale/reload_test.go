package sale_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestReloadShowsASaveWithoutAStep: Reload shows a saved configuration
// (here a pause) in the view at once and keeps the last tick's reading; the
// frontier's state in Redis is untouched however much Redis time passed.
// The next tick steps it, held.
func TestReloadShowsASaveWithoutAStep(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	now := time.Now()
	g := newSaleRig(t, rdb, event.Config{
		ID: "saved", Supply: 10, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 100,
	}, 1_000_000)
	stepped := g.tick(t, "a tick", func(*admission.Sale) bool { return true })
	const frontier = "ar:{saved}:adm"
	before, err := rdb.HGetAll(ctx, frontier).Result()
	if err != nil || before["t"] == "" {
		t.Fatalf("the frontier after a tick: %v %v, want it stepped", before, err)
	}
	configs := event.NewStore(rdb)
	cfg, err := configs.Get(ctx, "saved")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Paused = true
	if _, err := configs.Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// Redis time moves on: a step now would admit people and write its time.
	for {
		at, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if at.Sub(stepped.ServerTime) >= 100*time.Millisecond {
			break
		}
		time.Sleep(10 * time.Millisecond) // poll Redis TIME
	}
	if err := g.snaps.Reload(ctx, "saved"); err != nil {
		t.Fatal(err)
	}
	v, _ := g.snaps.Get("saved")
	if !v.Config.Paused || !reflect.DeepEqual(v.Reading, stepped.Reading) || !v.Refreshed.Equal(stepped.Refreshed) {
		t.Errorf("the view after a reload: paused %v, reading %+v at %v; want paused, the tick's reading %+v at %v",
			v.Config.Paused, v.Reading, v.Refreshed, stepped.Reading, stepped.Refreshed)
	}
	after, err := rdb.HGetAll(ctx, frontier).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("the frontier after a reload: %v, want it unstepped: %v", after, before)
	}
	held := g.tick(t, "the next tick", func(s *admission.Sale) bool { return s.ServerTime.After(stepped.ServerTime) })
	if held.Frontier != stepped.Frontier {
		t.Errorf("frontier %.1f after the paused tick, want %.1f: a pause holds it", held.Frontier, stepped.Frontier)
	}
}

// TestReloadOfANewSale: a sale the node has no view of gets one at
// Reload, with its configuration and stock and no reading until its first
// tick.
func TestReloadOfANewSale(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	now := time.Now()
	g := newSaleRig(t, rdb, event.Config{
		ID: "new", Supply: 10, ReserveUnits: 2, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 100,
	}, 5)
	if _, ok := g.snaps.Get("new"); ok {
		t.Fatal("a view before any tick or reload")
	}
	if err := g.snaps.Reload(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	v, ok := g.snaps.Get("new")
	if !ok || v.Config.ID != "new" || v.Remaining != 8 || v.SoldOut || v.Rate != 100 || !v.ServerTime.IsZero() {
		t.Fatalf("the view after a reload: %v %+v; want the sale, 8 units left, the configured rate, no reading", ok, v)
	}
	if n, err := rdb.Exists(ctx, "ar:{new}:adm").Result(); err != nil || n != 0 {
		t.Fatalf("the frontier after a reload: exists %d %v, want no step", n, err)
	}
	g.tick(t, "the first tick", func(s *admission.Sale) bool { return !s.ServerTime.IsZero() && s.Frontier >= 5 })
}
