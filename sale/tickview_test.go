package sale_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/sale"
	"github.com/redis/go-redis/v9"
)

// gatedConfigs is the event store with a gate: once armed, the next
// configuration read returns only when the test releases it, so a tick
// can be stopped between reading the configuration and publishing its view.
type gatedConfigs struct {
	*event.Store
	gate atomic.Pointer[configGate]
}

// configGate is one armed read: read closes when it has read, release
// lets it return.
type configGate struct{ read, release chan struct{} }

func (g *gatedConfigs) GetAt(ctx context.Context, id string) (event.Config, time.Time, error) {
	cfg, at, err := g.Store.GetAt(ctx, id)
	if gt := g.gate.Swap(nil); gt != nil {
		close(gt.read)
		<-gt.release
	}
	return cfg, at, err
}

// arm stops the next configuration read after it has read.
func (g *gatedConfigs) arm() *configGate {
	gt := &configGate{read: make(chan struct{}), release: make(chan struct{})}
	g.gate.Store(gt)
	return gt
}

// gatedNode is one node's view of the sales on rdb whose configuration
// reads can be held.
func gatedNode(rdb redis.UniversalClient) (*sale.Snapshots, *gatedConfigs) {
	configs := &gatedConfigs{Store: event.NewStore(rdb)}
	return sale.NewSnapshots(configs, admission.NewFrontier(rdb), claim.NewStore(rdb)), configs
}

// stalledTick starts a tick of event id on snaps that has read the
// configuration and waits; the returned function lets it finish and
// returns its error.
func stalledTick(t *testing.T, snaps *sale.Snapshots, configs *gatedConfigs, id string) func() error {
	t.Helper()
	gt := configs.arm()
	done := make(chan error, 1)
	go func() { done <- snaps.StepOne(context.Background(), id) }()
	select {
	case <-gt.read:
	case err := <-done:
		t.Fatalf("the tick ended before it read the configuration: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the tick never read the configuration")
	}
	return func() error {
		close(gt.release)
		return <-done
	}
}

// decide is the status answer of the first to join from view v.
func decide(v *admission.Sale) admission.State {
	return admission.Decide(v, 1, time.Now(), func() float64 { return 0.5 }).State
}

// TestSaveHoldsOverATickInProgress: a tick reads the configuration; staff
// pause the sale and the node that took the save reloads its view (the
// API's 200 goes out then); the tick then publishes the view it built from
// the configuration before the pause. From the 200 on, that node must show
// the pause: the tick's view, built from an older configuration, must not
// replace the reloaded one, however much later its reading is. The next
// tick shows the pause with its own reading. Another node, which only
// ticks, shows the pause from the first tick that reads the configuration
// after the save: within one tick.
//
// Before views carried the configuration they were built from into merge,
// the tick's view won (it has the later Redis time), and position 1, paused
// by staff, was admitted again until the next tick.
func TestSaveHoldsOverATickInProgress(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	now := time.Now()
	g := newSaleRig(t, rdb, event.Config{
		ID: "inflight", Supply: 100, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 1000,
	}, 5)
	a, aConfigs := gatedNode(rdb) // the node that takes the save
	b, bConfigs := gatedNode(rdb) // another node
	g.snaps = a
	g.tick(t, "everyone admitted", func(s *admission.Sale) bool { return s.Frontier >= 5 })
	if err := b.StepOne(ctx, "inflight"); err != nil {
		t.Fatal(err)
	}
	if v, _ := a.Get("inflight"); decide(v) != admission.Admitted {
		t.Fatalf("position 1 before the pause: %s, want admitted", decide(v))
	}

	finishA := stalledTick(t, a, aConfigs, "inflight")
	finishB := stalledTick(t, b, bConfigs, "inflight")
	store := event.NewStore(rdb)
	cfg, err := store.Get(ctx, "inflight")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Paused = true
	saved, err := store.Put(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(ctx, "inflight"); err != nil {
		t.Fatal(err)
	}
	reloaded, _ := a.Get("inflight")
	if !reloaded.Config.Paused || decide(reloaded) != admission.Paused {
		t.Fatalf("after the reload: paused %v, position 1 %s; want the pause shown", reloaded.Config.Paused, decide(reloaded))
	}
	// The 200 is out. Redis time moves on, so the tick's reading is later.
	testenv.WaitFor(t, "Redis time to pass the reloaded reading", 5*time.Second, func() bool {
		at, err := rdb.Time(ctx).Result()
		return err == nil && at.Sub(reloaded.ServerTime) >= 5*time.Millisecond
	})
	if err := finishA(); err != nil {
		t.Fatal(err)
	}
	v, _ := a.Get("inflight")
	if !v.Config.Paused || v.Config.Version != saved.Version {
		t.Fatalf("after the tick that read the configuration before the save: version %d, paused %v, position 1 %s; want version %d paused: the save was undone on the node that acknowledged it",
			v.Config.Version, v.Config.Paused, decide(v), saved.Version)
	}
	next := g.tick(t, "the next tick", func(s *admission.Sale) bool { return s.ServerTime.After(reloaded.ServerTime) })
	if !next.Config.Paused || decide(next) != admission.Paused {
		t.Fatalf("the next tick: paused %v, position 1 %s; want paused", next.Config.Paused, decide(next))
	}

	// The other node: its tick in progress read the configuration before
	// the save; the next one it starts shows the pause.
	if err := finishB(); err != nil {
		t.Fatal(err)
	}
	if err := b.StepOne(ctx, "inflight"); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.Get("inflight"); !v.Config.Paused || decide(v) != admission.Paused {
		t.Fatalf("the other node's first tick after the save: paused %v, position 1 %s; want paused", v.Config.Paused, decide(v))
	}
}

// TestViewFollowsAStoreThatLostASave: the store loses a save (a failover
// to a replica that had not copied it; here the older copy is written back
// by hand) after the node published it. The node's next tick reads the
// older version and must show it: what the store has now, not a save every
// other node no longer sees.
func TestViewFollowsAStoreThatLostASave(t *testing.T) {
	ctx := context.Background()
	rdb := testenv.StartRedis(t).Client(t)
	now := time.Now()
	g := newSaleRig(t, rdb, event.Config{
		ID: "lost", Supply: 100, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 1000,
	}, 5)
	first := g.tick(t, "a view", func(*admission.Sale) bool { return true })
	const key = "ar:{lost}:cfg"
	before, err := rdb.Get(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	store := event.NewStore(rdb)
	cfg := first.Config
	cfg.Paused = true
	if _, err := store.Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := g.snaps.Reload(ctx, "lost"); err != nil {
		t.Fatal(err)
	}
	if v, _ := g.snaps.Get("lost"); !v.Config.Paused {
		t.Fatal("the reload did not show the pause")
	}
	if err := rdb.Set(ctx, key, before, 0).Err(); err != nil { // the save is lost
		t.Fatal(err)
	}
	v := g.tick(t, "a tick after the loss", func(s *admission.Sale) bool { return s.ServerTime.After(first.ServerTime) })
	if v.Config.Paused || v.Config.Version != first.Config.Version {
		t.Fatalf("after the store lost the pause: version %d, paused %v; want version %d as stored, not paused",
			v.Config.Version, v.Config.Paused, first.Config.Version)
	}
}
