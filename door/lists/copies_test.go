package lists

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// TestCopyReadByListHas: a sale's copy, read by list_has as the join
// reads it, holds every member and no one else, with many entries
// sharing a 2-byte field; single adds and removes reach it.
func TestCopyReadByListHas(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, s := ctxOf(t), NewStore(rdb)
		members := ids("m", 150_000) // > 65,536: fields must be shared
		newList(t, s, "block", KindUser, members)
		if err := s.Sync(ctx, sale("ev1", 1, false, []string{"block"}, nil)); err != nil {
			t.Fatal(err)
		}
		key := CopyKey(queue.LaneTag("ev1", 0), "block")
		fields, err := rdb.HLen(ctx, key).Result()
		if err != nil || fields >= int64(len(members)) {
			t.Fatalf("copy has %d fields (%v) for %d entries: none shared", fields, err, len(members))
		}
		for _, u := range members[:2000] {
			if !listHas(t, rdb, s, key, u) {
				t.Fatalf("member %q not found by list_has", u)
			}
		}
		for _, u := range members[len(members)-500:] {
			if !listHas(t, rdb, s, key, u) {
				t.Fatalf("member %q not found by list_has", u)
			}
		}
		shared := 0
		for _, u := range ids("stranger", 2000) {
			if listHas(t, rdb, s, key, u) {
				t.Fatalf("non-member %q found by list_has", u)
			}
			if n, _ := rdb.HExists(ctx, key, Arg(s.Hash(u))[:2]).Result(); n {
				shared++
			}
		}
		if shared < 1000 {
			t.Fatalf("only %d of 2000 non-members share a field with members: the test proves too little", shared)
		}
		if _, err := s.Add(ctx, "block", "late"); err != nil {
			t.Fatal(err)
		}
		if !listHas(t, rdb, s, key, "late") {
			t.Fatal("an added member is not on the copy")
		}
		if _, err := s.Remove(ctx, "block", members[7]); err != nil {
			t.Fatal(err)
		}
		if listHas(t, rdb, s, key, members[7]) || !listHas(t, rdb, s, key, members[8]) {
			t.Fatal("a removed member is still on the copy (or its neighbour went)")
		}
	})
}

// TestShardedCopiesSplit: a sale of S join shards has, per shard, a copy
// holding exactly the members whose joins land there (queue.ShardOf), and
// with lanes a whole copy in the event's slot; a device list is whole in
// every shard; a network list has no copy.
func TestShardedCopiesSplit(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, s := ctxOf(t), NewStore(rdb)
		members := ids("u", 3000)
		newList(t, s, "elig", KindUser, members)
		newList(t, s, "devs", KindDevice, []string{"d1", "d2"})
		if _, err := s.Create(ctx, "nets", KindNetwork); err != nil {
			t.Fatal(err)
		}
		const S = 4
		if err := s.Sync(ctx, sale("big", S, true, []string{"devs", "nets"}, []string{"elig"})); err != nil {
			t.Fatal(err)
		}
		total := int64(0)
		for sh := range S {
			key := CopyKey(queue.ShardTag("big", sh), "elig")
			vals, err := rdb.HVals(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				total += int64(len(v) / 6)
			}
			for _, d := range []string{"d1", "d2"} {
				if !listHas(t, rdb, s, CopyKey(queue.ShardTag("big", sh), "devs"), d) {
					t.Errorf("device %s not on shard %d's copy", d, sh)
				}
			}
		}
		if total != int64(len(members)) {
			t.Fatalf("the shards' copies hold %d entries, want %d", total, len(members))
		}
		for _, u := range members[:400] {
			for sh := range S {
				if got, want := listHas(t, rdb, s, CopyKey(queue.ShardTag("big", sh), "elig"), u), sh == queue.ShardOf(u, S); got != want {
					t.Fatalf("%s on shard %d's copy: %v, want %v", u, sh, got, want)
				}
			}
			if !listHas(t, rdb, s, CopyKey(queue.LaneTag("big", 0), "elig"), u) {
				t.Fatalf("%s not on the lanes' whole copy", u)
			}
		}
		if n, _ := rdb.Exists(ctx, CopyKey(queue.LaneTag("big", 0), "nets")).Result(); n != 0 {
			t.Fatal("a network list has a copy")
		}
		// A single add lands on its shard only.
		if _, err := s.Add(ctx, "elig", "newcomer"); err != nil {
			t.Fatal(err)
		}
		for sh := range S {
			if got, want := listHas(t, rdb, s, CopyKey(queue.ShardTag("big", sh), "elig"), "newcomer"), sh == queue.ShardOf("newcomer", S); got != want {
				t.Fatalf("newcomer on shard %d: %v, want %v", sh, got, want)
			}
		}
		// Back to one shard, no lanes: the shards' copies go.
		if err := s.Sync(ctx, sale("big", 1, false, nil, []string{"elig"})); err != nil {
			t.Fatal(err)
		}
		for sh := range S {
			for _, l := range []string{"elig", "devs"} {
				if n, _ := rdb.Exists(ctx, CopyKey(queue.ShardTag("big", sh), l)).Result(); n != 0 {
					t.Fatalf("shard %d's copy of %s outlived the change", sh, l)
				}
			}
		}
		if !listHas(t, rdb, s, CopyKey(queue.LaneTag("big", 0), "elig"), "newcomer") {
			t.Fatal("the one copy lacks a member")
		}
	})
}

// TestListChangeReachesCopiesAndView: a load and a single add after the
// sale synced reach its copy at once and the node's view after Refresh;
// a deleted list leaves the view.
func TestListChangeReachesCopiesAndView(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, s := ctxOf(t), NewStore(rdb)
		newList(t, s, "block", KindUser, []string{"a", "b"})
		if err := s.Sync(ctx, sale("ev", 1, false, []string{"block"}, nil)); err != nil {
			t.Fatal(err)
		}
		view := NewSet(NewStore(rdb)) // another node's
		if err := view.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if view.User("block", "a") != door.Maybe || view.User("block", "c") != door.Absent {
			t.Fatal("first refresh: the view does not hold the list")
		}
		key := CopyKey(queue.LaneTag("ev", 0), "block")
		if _, err := s.Load(ctx, "block", csvOf([]string{"c"}), LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		if !listHas(t, rdb, s, key, "c") {
			t.Fatal("an appended member is not on the copy")
		}
		m, err := s.Add(ctx, "block", "d")
		if err != nil {
			t.Fatal(err)
		}
		waitView(t, view, "block", m.Version)
		for _, u := range []string{"a", "b", "c", "d"} {
			if view.User("block", u) != door.Maybe {
				t.Fatalf("member %s Absent after the refresh", u)
			}
		}
		if _, err := s.Load(ctx, "block", csvOf([]string{"z"}), LoadOptions{Replace: true}); err != nil {
			t.Fatal(err)
		}
		if listHas(t, rdb, s, key, "a") || !listHas(t, rdb, s, key, "z") {
			t.Fatal("a replace did not reach the copy")
		}
		if err := s.Delete(ctx, "block"); !errors.Is(err, ErrInUse) {
			t.Fatalf("delete while referenced: %v, want ErrInUse", err)
		}
		if err := s.Sync(ctx, sale("ev", 1, false, nil, nil)); err != nil {
			t.Fatal(err)
		}
		if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
			t.Fatal("the copy outlived the sale's reference")
		}
		if err := s.Delete(ctx, "block"); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, "the view drops the deleted list", 10*time.Second, func() error {
			if err := view.Refresh(ctx); err != nil {
				return err
			}
			if _, ok := view.Version("block"); ok {
				return fmt.Errorf("still held")
			}
			return nil
		})
	})
}

// waitView refreshes view until it holds list at version.
func waitView(t testing.TB, view *Set, list string, version int64) {
	t.Helper()
	testenv.Eventually(t, "the view reaches "+list+"'s version", 30*time.Second, func() error {
		if err := view.Refresh(context.Background()); err != nil {
			return err
		}
		if v, _ := view.Version(list); v != version {
			return fmt.Errorf("at %d, want %d", v, version)
		}
		return nil
	})
}

// TestSyncUnknownList: a door naming a list that does not exist is
// refused, naming it, and records nothing (the named list that exists
// may still be deleted).
func TestSyncUnknownList(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, s := ctxOf(t), NewStore(rdb)
		newList(t, s, "real", KindUser, []string{"a"})
		err := s.Sync(ctx, sale("ev", 1, false, []string{"real"}, []string{"ghost"}))
		if !errors.Is(err, ErrUnknownList) || !strings.Contains(err.Error(), `"ghost"`) {
			t.Fatalf("Sync naming ghost: %v, want ErrUnknownList naming it", err)
		}
		if err := s.Delete(ctx, "real"); err != nil {
			t.Fatalf("delete after a refused sync: %v", err)
		}
	})
}
