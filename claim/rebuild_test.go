package claim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
)

// TestRebuildKeepsWhatTheStreamLost rebuilds an event whose stream lacks
// claims Redis holds (a publisher acknowledged them without publishing):
// the rebuild republishes them and counts them as sold, so stock is never
// handed out twice; a second rebuild changes nothing.
func TestRebuildKeepsWhatTheStreamLost(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	now := time.Now().UTC()
	cfg := event.Config{ID: "lost", Name: "lost", Supply: 10, PerUserLimit: 1,
		StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: 2}
	cfg.Defaults()
	configs := event.NewStore(e.rdb)
	if _, err := configs.Put(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Lay(ctx, SaleOf(cfg), cfg.OnSale()); err != nil {
		t.Fatal(err)
	}
	liar := NewService(e.store, publisherFunc(func(context.Context, string, string, []byte) error { return nil }))
	for i := range 6 {
		svc := e.svc
		if i < 3 {
			svc = liar
		}
		if _, err := svc.Claim(ctx, Request{Event: cfg.ID, User: fmt.Sprint("l", i), IdemKey: "k", Limit: 1, Buckets: 2}); err != nil {
			t.Fatal(err)
		}
	}
	liar.flush(ctx, func(err error) { t.Fatal(err) }) // out of the outbox, never on the stream
	rb := NewRebuilder(e.svc, e.js, configs)
	for round := range 2 {
		rep, err := rb.Rebuild(ctx, cfg.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Granted != 6 || rep.Available != 4 || rep.After.Remaining != 4 {
			t.Errorf("rebuild %d: %+v, want 6 granted and 4 left", round, rep)
		}
		if want := []int{3, 0}[round]; rep.Republished != want {
			t.Errorf("rebuild %d republished %d claims, want %d", round, rep.Republished, want)
		}
	}
	granted, _ := e.streamCheck(t, cfg.ID)
	if len(granted) != 6 {
		t.Errorf("stream holds %d claims after the rebuild, want 6", len(granted))
	}
}

// pausingConfigs is the event store with an operator who pauses the event
// right after the rebuild's own pause was stored.
type pausingConfigs struct {
	*event.Store
	t    *testing.T
	puts int
}

func (c *pausingConfigs) Put(ctx context.Context, cfg event.Config) (event.Config, error) {
	saved, err := c.Store.Put(ctx, cfg)
	if c.puts++; c.puts == 1 && err == nil {
		// The operator's POST /admin/events/{id}/pause, while the rebuild
		// runs: it stores the flag (already set) again.
		cur, gerr := c.Store.Get(ctx, cfg.ID)
		if gerr != nil {
			c.t.Fatal(gerr)
		}
		cur.Paused = true
		if _, perr := c.Store.Put(ctx, cur); perr != nil {
			c.t.Fatal(perr)
		}
	}
	return saved, err
}

// TestRebuildKeepsPauseIssuedDuringIt: an operator pauses the event while a
// rebuild runs; the rebuild must not resume it when it restores the flag it
// saved (unpaused) at its start.
func TestRebuildKeepsPauseIssuedDuringIt(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	cfg := saleConfig(t, e, Sale{ID: "pause", Buckets: 2}, 10)
	configs := &pausingConfigs{Store: event.NewStore(e.rdb), t: t}
	rep, err := NewRebuilder(e.svc, e.js, configs).Rebuild(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := configs.Get(ctx, cfg.ID)
	if err != nil || !got.Paused || !rep.Paused {
		t.Errorf("after the rebuild: paused=%v (report %v, %v), want the operator's pause kept", got.Paused, rep.Paused, err)
	}
	// Without an operator, the rebuild resumes what it paused.
	rep, err = NewRebuilder(e.svc, e.js, configs.Store).Rebuild(ctx, cfg.ID)
	if err != nil || !rep.Paused {
		t.Fatalf("second rebuild: %+v %v, want it left paused (it was paused before)", rep, err)
	}
	got.Paused = false
	if _, err := configs.Store.Put(ctx, got); err != nil {
		t.Fatal(err)
	}
	rep, err = NewRebuilder(e.svc, e.js, configs.Store).Rebuild(ctx, cfg.ID)
	if got, gerr := configs.Get(ctx, cfg.ID); err != nil || gerr != nil || got.Paused || rep.Paused {
		t.Errorf("rebuild of a running event: paused=%v report %v (%v %v), want resumed", got.Paused, rep.Paused, err, gerr)
	}
}

// TestRebuildFailureUnfreezes: a rebuild that fails before rewriting any
// bucket (here an outbox entry it cannot decode) unfreezes the buckets and
// leaves the event paused; once the cause is gone, a rebuild succeeds.
func TestRebuildFailureUnfreezes(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	cfg := saleConfig(t, e, Sale{ID: "fails", Buckets: 2}, 10)
	if _, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: "u", IdemKey: "k", Limit: 1, Buckets: 2}); err != nil {
		t.Fatal(err)
	}
	box := bucketOf(cfg.ID, 1).outbox()
	if err := e.rdb.HSet(ctx, box, "broken", "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	configs := event.NewStore(e.rdb)
	rb := NewRebuilder(e.svc, e.js, configs)
	if _, err := rb.Rebuild(ctx, cfg.ID); err == nil {
		t.Fatal("rebuild with an undecodable outbox entry succeeded")
	}
	for b := range cfg.Buckets {
		if n, err := e.rdb.Exists(ctx, bucketOf(cfg.ID, b).frozen()).Result(); err != nil || n != 0 {
			t.Errorf("bucket %d frozen after a failed rebuild (%v)", b, err)
		}
	}
	if got, err := configs.Get(ctx, cfg.ID); err != nil || !got.Paused {
		t.Errorf("event paused=%v (%v) after a failed rebuild, want paused", got.Paused, err)
	}
	if err := e.rdb.HDel(ctx, box, "broken").Err(); err != nil {
		t.Fatal(err)
	}
	rep, err := rb.Rebuild(ctx, cfg.ID)
	if err != nil || rep.Granted != 1 || rep.Available != cfg.OnSale()-1 {
		t.Errorf("rebuild after the fix: %+v %v, want 1 granted", rep, err)
	}
}

// pauseBetweenReads is the event store with an operator whose pause is
// stored between the rebuild's first read of the configuration and its
// own pause's read.
type pauseBetweenReads struct {
	*event.Store
	t    *testing.T
	gets int
}

func (c *pauseBetweenReads) Get(ctx context.Context, id string) (event.Config, error) {
	if c.gets++; c.gets == 2 {
		cur, err := c.Store.Get(ctx, id)
		if err != nil {
			c.t.Fatal(err)
		}
		cur.Paused = true
		if _, err := c.Store.Put(ctx, cur); err != nil {
			c.t.Fatal(err)
		}
	}
	return c.Store.Get(ctx, id)
}

// TestRebuildKeepsPauseBeforeItsOwn: an operator's pause stored after the
// rebuild first read the (running) event and before its own pause finds
// the flag set. The rebuild paused nothing, so it must resume nothing.
func TestRebuildKeepsPauseBeforeItsOwn(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	cfg := saleConfig(t, e, Sale{ID: "between", Buckets: 2}, 10)
	configs := &pauseBetweenReads{Store: event.NewStore(e.rdb), t: t}
	rep, err := NewRebuilder(e.svc, e.js, configs).Rebuild(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := configs.Store.Get(ctx, cfg.ID); err != nil || !got.Paused || !rep.Paused {
		t.Errorf("after the rebuild: paused=%v (report %v, %v), want the operator's pause kept", got.Paused, rep.Paused, err)
	}
}
