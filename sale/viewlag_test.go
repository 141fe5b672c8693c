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

// TestStaleViewNeverFreezesAnOldWindow: staff change a sale just before
// an instant that nodes act on (the window's end, the queue's opening)
// while a node still serves joins from its view of a tick ago. Whatever
// the store accepted, a join from that view must never act on what the
// stored configuration no longer says: freeze the window at an end it no
// longer has, or put someone in a queue layout it no longer has.
func TestStaleViewNeverFreezesAnOldWindow(t *testing.T) {
	r := testenv.StartRedis(t)
	cases := []struct {
		name   string
		at     func(now time.Time) (opens, starts time.Time)
		change func(c *event.Config)
	}{
		{"start postponed an hour, 1.5 s before it",
			func(now time.Time) (time.Time, time.Time) {
				return now.Add(-time.Minute), now.Add(1500 * time.Millisecond)
			},
			func(c *event.Config) { c.StartsAt, c.EndsAt = c.StartsAt.Add(time.Hour), c.EndsAt.Add(time.Hour) }},
		{"join_shards changed 1.5 s before the queue opens",
			func(now time.Time) (time.Time, time.Time) {
				return now.Add(1500 * time.Millisecond), now.Add(time.Hour)
			},
			func(c *event.Config) { c.JoinShards = 4 }},
		// Just over event.LockMargin before: the store takes the change,
		// and the view read before it is older than event.MaxViewAge when
		// it would act.
		{"start postponed an hour, just over the lock margin before it",
			func(now time.Time) (time.Time, time.Time) {
				return now.Add(-time.Minute), now.Add(event.LockMargin + 3*time.Second)
			},
			func(c *event.Config) { c.StartsAt, c.EndsAt = c.StartsAt.Add(time.Hour), c.EndsAt.Add(time.Hour) }},
		{"join_shards changed just over the lock margin before the queue opens",
			func(now time.Time) (time.Time, time.Time) {
				return now.Add(event.LockMargin + 3*time.Second), now.Add(time.Hour)
			},
			func(c *event.Config) { c.JoinShards = 4 }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			staleJoin(t, r.Client(t), string(rune('a'+i))+"lag", tc.at, tc.change)
		})
	}
}

// staleJoin runs one case of TestStaleViewNeverFreezesAnOldWindow.
func staleJoin(t *testing.T, rdb redis.UniversalClient, id string, at func(time.Time) (time.Time, time.Time), change func(*event.Config)) {
	ctx := context.Background()
	opens, starts := at(time.Now())
	g := newSaleRig(t, rdb, event.Config{ID: id, Supply: 10, PrequeueOpensAt: opens, StartsAt: starts, EndsAt: starts.Add(2 * time.Hour)}, 0)
	sale := g.tick(t, "a view", func(*admission.Sale) bool { return true })
	store := event.NewStore(rdb)
	next := sale.Config
	change(&next)
	_, _, err := store.PutBefore(ctx, next, event.LockAt(&sale.Config, &next))
	if err != nil && !errors.Is(err, event.ErrLocked) {
		t.Fatal(err)
	}
	t.Logf("staff change: %v", err)
	// Past the instant the node's view acts on, by Redis TIME.
	act := sale.Config.WindowEnd()
	if opens.After(time.Now()) {
		act = opens
	}
	for {
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !now.Before(act) {
			break
		}
		time.Sleep(act.Sub(now) / 2)
	}
	cfg := &sale.Config // the node's view, read before the change
	entry, joinErr := queue.NewJoiner(rdb).Join(ctx, id, "someone", sale.JoinTimes(0))
	if joinErr != nil && !errors.Is(joinErr, queue.ErrStaleView) {
		t.Fatal(joinErr)
	}
	t.Logf("join from the view read before the change: %+v, %v", entry, joinErr)
	stored, err := store.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if w, err := rdb.Get(ctx, queue.KeysFor(id).Window).Result(); err == nil && now.Before(stored.WindowEnd()) {
		t.Errorf("window frozen at W = %s while the stored window ends at %s, %s from now", w, stored.WindowEnd().UTC().Format(time.RFC3339), stored.WindowEnd().Sub(now).Round(time.Second))
	}
	if joinErr == nil && stored.JoinShards != cfg.JoinShards {
		t.Errorf("joined on %d join shard(s) while the stored sale has %d", cfg.JoinShards, stored.JoinShards)
	}
}
