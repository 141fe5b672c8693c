package admission_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// TestEnterLists: a room's entrance decides the door's exact lists in
// its one script call, from the copies package door/lists lays for the
// room (on a redis-server and on a Redis Cluster of three masters): a
// member of the eligibility list is admitted; a caller on none of them
// is refused queue.ErrNotEligible, at the join and at the gate's
// admit-at-once, and one on the block list queue.ErrBlocked, with
// nothing written (no seq taken, no entry); someone listed after
// entering gets no admission from their entry. Copies outside the
// room's slot, or a hash that is not 8 bytes, fail before Redis.
func TestEnterLists(t *testing.T) {
	t.Run("single", func(t *testing.T) { enterLists(t, testenv.StartRedis(t).Client(t)) })
	t.Run("cluster", func(t *testing.T) { enterLists(t, testenv.StartRedisCluster(t, 3).Client(t)) })
}

func enterLists(t *testing.T, rdb redis.UniversalClient) {
	ctx := context.Background()
	const ev = "club"
	store := lists.NewStore(rdb)
	if err := store.Init(ctx); err != nil {
		t.Fatal(err)
	}
	for list, users := range map[string][]string{"members": {"alice", "mallory", "bob"}, "resellers": {"mallory"}} {
		if _, err := store.Create(ctx, list, lists.KindUser); err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			if _, err := store.Add(ctx, list, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := &event.Config{ID: ev, Mode: event.SafetyNet, JoinShards: 1}
	cfg.Door.BlockLists, cfg.Door.EligibleLists = []string{"resellers"}, []string{"members"}
	if err := store.Sync(ctx, cfg); err != nil { // the room's copies
		t.Fatal(err)
	}
	tag := queue.LaneTag(ev, 0)
	exact := func(u string) queue.Lists {
		return queue.Lists{Block: []string{lists.CopyKey(tag, "resellers")}, Eligible: []string{lists.CopyKey(tag, "members")}, Hash: lists.Arg(store.Hash(u))}
	}
	f := admission.NewFrontier(rdb)
	in := func(u string, admitOnly bool) (admission.Entered, error) {
		e := room(u, 1000, 100, time.Minute)
		e.AdmitOnly = admitOnly
		e.Lists = exact(u)
		if admitOnly {
			e.User = "" // the gate keeps no entry; the hash names the visitor
		}
		return f.Enter(ctx, ev, e)
	}
	counter := func() int64 {
		v, _ := rdb.Get(ctx, queue.KeysFor(ev).Seq).Int64()
		return v
	}
	if en, err := in("alice", false); err != nil || !en.Admitted || en.Seq != 1 {
		t.Fatalf("a member: %+v, %v, want admitted at once with seq 1", en, err)
	}
	for _, c := range []struct {
		user      string
		admitOnly bool
		want      error
	}{{"carol", false, queue.ErrNotEligible}, {"carol", true, queue.ErrNotEligible}, {"mallory", false, queue.ErrBlocked}, {"mallory", true, queue.ErrBlocked}} {
		if en, err := in(c.user, c.admitOnly); !errors.Is(err, c.want) {
			t.Errorf("%s (admit only %v): %+v, %v, want %v", c.user, c.admitOnly, en, err, c.want)
		}
	}
	if got := counter(); got != 1 {
		t.Errorf("refused entrances moved the counter to %d, want 1", got)
	}
	for _, u := range []string{"carol", "mallory"} {
		if has, _ := rdb.HExists(ctx, queue.UserKey(ev, u), u).Result(); has {
			t.Errorf("a refused entrance wrote %s's entry", u)
		}
	}
	if en, err := in("alice", true); err != nil || !en.Admitted || en.Seq != 2 {
		t.Fatalf("a member at the gate: %+v, %v, want admitted at once with seq 2", en, err)
	}
	if en, err := in("bob", false); err != nil || !en.Admitted {
		t.Fatalf("bob, a member: %+v, %v, want admitted", en, err)
	}
	if _, err := store.Add(ctx, "resellers", "bob"); err != nil { // listed after entering
		t.Fatal(err)
	}
	if en, err := in("bob", false); !errors.Is(err, queue.ErrBlocked) {
		t.Errorf("bob listed after entering: %+v, %v, want ErrBlocked", en, err)
	}

	// Bad input fails before Redis: a copy in another slot, a short hash.
	e := room("dave", 1000, 100, time.Minute)
	e.Lists = queue.Lists{Eligible: []string{lists.CopyKey(queue.LaneTag("other", 0), "members")}, Hash: lists.Arg(1)}
	if _, err := f.Enter(ctx, ev, e); err == nil {
		t.Error("a copy in another slot: no error")
	}
	e.Lists = queue.Lists{Eligible: []string{lists.CopyKey(tag, "members")}, Hash: "short"}
	if _, err := f.Enter(ctx, ev, e); err == nil {
		t.Error("a hash of 5 bytes: no error")
	}
	if got := counter(); got != 3 {
		t.Errorf("the counter is %d, want 3 (alice, alice at the gate, bob)", got)
	}
}
