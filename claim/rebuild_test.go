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
	if err := e.store.Lay(ctx, cfg.ID, cfg.OnSale(), cfg.Buckets); err != nil {
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
