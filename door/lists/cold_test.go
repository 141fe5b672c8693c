package lists

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/redis/go-redis/v9"
)

// The door's steps after the join, which decide from the node's view alone.
var laterSteps = []door.Step{door.Status, door.Gate, door.Room, door.Claim}

var (
	outside  = netip.MustParseAddr("203.0.113.9") // on no list
	inBadNet = netip.MustParseAddr("10.6.1.2")    // on the block list "badnet"
)

// coldSales are a sale that blocks the lists "bad" and "badnet", one
// that blocks "bad" alone, and one whose eligibility list is "vip".
type coldSales struct{ block, ids, elig *event.Config }

// coldLists loads a block list of ids "bad" (mallory), a block list of
// networks "badnet" (10.6.0.0/16) and an eligibility list "vip" (alice),
// and returns sales that name them and a store of the node's own (its
// hash key read, as a node's is at start).
func coldLists(t *testing.T, rdb redis.UniversalClient) (coldSales, *Store) {
	t.Helper()
	s := NewStore(rdb)
	newList(t, s, "bad", KindUser, []string{"mallory"})
	newList(t, s, "badnet", KindNetwork, []string{"10.6.0.0/16"})
	newList(t, s, "vip", KindUser, []string{"alice"})
	node := NewStore(rdb)
	if err := node.Init(ctxOf(t)); err != nil {
		t.Fatal(err)
	}
	var c coldSales
	c.block, c.ids, c.elig = &event.Config{ID: "cold"}, &event.Config{ID: "ids"}, &event.Config{ID: "vip"}
	c.block.Door.BlockLists = []string{"bad", "badnet"}
	c.ids.Door.BlockLists = []string{"bad"}
	c.elig.Door.EligibleLists = []string{"vip"}
	return c, node
}

// acl changes the default user's commands (a Redis that refuses the
// node's list reads), and puts them back at the end.
func acl(t *testing.T, rdb redis.UniversalClient, rule string) {
	t.Helper()
	set := func(c *redis.Client) error { return c.Do(ctxOf(t), "ACL", "SETUSER", "default", rule).Err() }
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachShard(ctxOf(t), func(_ context.Context, c *redis.Client) error { return set(c) })
	} else {
		err = set(rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatalf("ACL SETUSER default %s: %v", rule, err)
	}
}

// wantRefusedAfterTheJoin: a blocked caller (by id or by network) is
// refused at every step after the join.
func wantRefusedAfterTheJoin(t *testing.T, d *door.Door, c coldSales) {
	t.Helper()
	cfg := c.block
	for _, step := range laterSteps {
		for _, r := range []door.Request{{User: "mallory", Addr: outside}, {User: "alice", Addr: inBadNet}} {
			if v := d.Check(cfg, &r, step); v.Action != door.Block {
				t.Errorf("step %d, %s from %s: %+v, want block", step, r.User, r.Addr, v)
			}
		}
	}
}

// wantNormalAnswers: the view's filters answer as they do on a node
// that holds every list.
func wantNormalAnswers(t *testing.T, d *door.Door, c coldSales) {
	t.Helper()
	wantRefusedAfterTheJoin(t, d, c)
	for _, step := range append(laterSteps, door.Join) {
		if v := d.Check(c.block, &door.Request{User: "alice", Addr: outside}, step); v.Action != door.Queue || !v.Exact.Empty() {
			t.Errorf("step %d, alice (on no block list): %+v, want queue", step, v)
		}
		if v := d.Check(c.elig, &door.Request{User: "bob", Addr: outside}, step); v.Action != door.NotEligible {
			t.Errorf("step %d, bob (not on vip): %+v, want not_eligible", step, v)
		}
	}
	if v := d.Check(c.elig, &door.Request{User: "alice", Addr: outside}, door.Status); v.Action != door.Queue {
		t.Errorf("alice (on vip) at status: %+v, want queue", v)
	}
	for _, cfg := range []*event.Config{c.block, c.ids} {
		if v := d.Check(cfg, &door.Request{User: "mallory", Addr: outside}, door.Join); v.Action != door.Queue || !slices.Equal(v.Exact.Block, []string{"bad"}) {
			t.Errorf("mallory at the join of %s: %+v, want queue with bad to the script", cfg.ID, v)
		}
	}
}

// TestColdViewRefusesTheBlocked: a node whose first Refresh could not
// read the lists' versions (Redis refuses HGETALL) holds no list; the
// door must not read that as "on none": a blocked caller is refused at
// every step, the join included (the join script has no copy of a
// network list, and the node does not know which lists are of ids). An
// eligible caller after the join is let on. Once a Refresh succeeds the
// filters answer as usual.
func TestColdViewRefusesTheBlocked(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		c, node := coldLists(t, rdb)
		acl(t, rdb, "-hgetall")
		view := NewSet(node)
		if err := view.Refresh(ctxOf(t)); err == nil {
			t.Fatal("a Refresh Redis refused the versions to succeeded")
		}
		if view.Ready() {
			t.Fatal("a view that read no list is ready")
		}
		d := door.New(view, nil)
		wantRefusedAfterTheJoin(t, d, c)
		for _, r := range []door.Request{{User: "mallory", Addr: outside}, {User: "alice", Addr: inBadNet}} {
			if v := d.Check(c.block, &r, door.Join); v.Action != door.Block {
				t.Errorf("%s from %s at the join of a node that read no list: %+v, want block", r.User, r.Addr, v)
			}
		}
		if v := d.Check(c.block, &door.Request{User: "carol", Addr: outside}, door.Status); v.Action != door.Block {
			t.Errorf("carol at status on a node that read no list: %+v, want block", v)
		}
		if v := d.Check(c.elig, &door.Request{User: "bob", Addr: outside}, door.Status); v.Action != door.Queue {
			t.Errorf("bob at status, vip not held: %+v, want queue (the join was exact)", v)
		}
		if v := d.Check(c.elig, &door.Request{User: "bob", Addr: outside}, door.Join); v.Action == door.Queue {
			t.Errorf("bob at the join, no list read: %+v, want a refusal (the node cannot tell vip's kind)", v)
		}
		acl(t, rdb, "+hgetall")
		if err := view.Refresh(ctxOf(t)); err != nil {
			t.Fatalf("Refresh once Redis answers: %v", err)
		}
		if !view.Ready() {
			t.Fatal("a view that read every list is not ready")
		}
		wantNormalAnswers(t, d, c)
	})
}

// TestFailedBuildRefusesTheBlocked: a node read the lists' versions but
// could not build them (Redis refuses HMGET, the entries' read): it
// knows each list's kind, not its entries. A blocked caller is refused
// after the join; at the join a list of ids goes to the join script's
// exact copy, a list of networks (which has none) refuses. An
// eligibility list the node lacks goes to the script at the join and
// lets the caller on afterwards.
func TestFailedBuildRefusesTheBlocked(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		c, node := coldLists(t, rdb)
		acl(t, rdb, "-hmget")
		view := NewSet(node)
		if err := view.Refresh(ctxOf(t)); err == nil {
			t.Fatal("a Refresh whose builds failed succeeded")
		}
		if view.Ready() {
			t.Fatal("a view whose builds failed is ready")
		}
		d := door.New(view, nil)
		wantRefusedAfterTheJoin(t, d, c)
		if v := d.Check(c.ids, &door.Request{User: "mallory", Addr: outside}, door.Join); v.Action != door.Queue || !slices.Equal(v.Exact.Block, []string{"bad"}) {
			t.Errorf("mallory at the join: %+v, want queue with bad to the script", v)
		}
		for _, r := range []door.Request{{User: "alice", Addr: inBadNet}, {User: "alice", Addr: outside}, {User: "mallory"}} {
			if v := d.Check(c.block, &r, door.Join); v.Action != door.Block {
				t.Errorf("%s from %s at the join, badnet not held: %+v, want block (no copy decides a network)", r.User, r.Addr, v)
			}
		}
		if v := d.Check(c.elig, &door.Request{User: "bob", Addr: outside}, door.Join); v.Action != door.Queue || !slices.Equal(v.Exact.Eligible, []string{"vip"}) {
			t.Errorf("bob at the join, vip not held: %+v, want queue with vip to the script", v)
		}
		if v := d.Check(c.elig, &door.Request{User: "bob", Addr: outside}, door.Status); v.Action != door.Queue {
			t.Errorf("bob at status, vip not held: %+v, want queue (the join was exact)", v)
		}
		for _, name := range []string{"bad", "badnet", "vip"} {
			if _, ok := view.Version(name); ok {
				t.Errorf("the view holds %s after its build failed", name)
			}
		}
		acl(t, rdb, "+hmget")
		// The first Refresh was the caller's; the next builds in the
		// background.
		deadline := time.Now().Add(10 * time.Second)
		for !view.Holds("bad", "badnet", "vip") {
			if time.Now().After(deadline) {
				t.Fatal("the view never built the lists once Redis answered")
			}
			_ = view.Refresh(ctxOf(t))
			time.Sleep(20 * time.Millisecond)
		}
		if !view.Ready() {
			t.Fatal("a view that built every list is not ready")
		}
		wantNormalAnswers(t, d, c)
	})
}

// TestBuildInProgressRefusesTheBlocked: a list created after the node's
// first Refresh, and named by a sale before its background build ends,
// refuses a blocked caller after the join meanwhile.
func TestBuildInProgressRefusesTheBlocked(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		node := NewStore(rdb)
		view := NewSet(node)
		if err := view.Refresh(ctxOf(t)); err != nil {
			t.Fatal(err)
		}
		c, _ := coldLists(t, rdb)
		release := make(chan struct{})
		started := make(chan string, 3)
		view.beforeBuild = func(name string) { started <- name; <-release }
		if err := view.Refresh(ctxOf(t)); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			<-started
		}
		if !view.Ready() {
			t.Fatal("a list created after the first read took the view out of readiness (every node would go at once)")
		}
		d := door.New(view, nil)
		wantRefusedAfterTheJoin(t, d, c)
		if v := d.Check(c.ids, &door.Request{User: "mallory", Addr: outside}, door.Join); v.Action != door.Queue || !slices.Equal(v.Exact.Block, []string{"bad"}) {
			t.Errorf("mallory at the join while bad builds: %+v, want queue with bad to the script", v)
		}
		close(release)
		deadline := time.Now().Add(10 * time.Second)
		for !view.Holds("bad", "badnet", "vip") {
			if time.Now().After(deadline) {
				t.Fatal("the builds never ended")
			}
			time.Sleep(10 * time.Millisecond)
		}
		wantNormalAnswers(t, d, c)
	})
}

// TestFailedRebuildRefusesTheBlocked: a node holds a list, the list
// changes (mallory is added), and the node cannot read the new entries
// (Redis refuses HMGET): its previous view, which lacks mallory, must
// not answer on however long; the list is Unknown until a build
// succeeds, and mallory is refused after the join.
func TestFailedRebuildRefusesTheBlocked(t *testing.T) {
	eachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		s := NewStore(rdb)
		newList(t, s, "bad", KindUser, []string{"eve"})
		view := NewSet(s)
		if err := view.Refresh(ctxOf(t)); err != nil {
			t.Fatal(err)
		}
		cfg := &event.Config{ID: "re"}
		cfg.Door.BlockLists = []string{"bad"}
		if _, err := s.Add(ctxOf(t), "bad", "mallory"); err != nil {
			t.Fatal(err)
		}
		acl(t, rdb, "-hmget")
		d := door.New(view, nil)
		deadline := time.Now().Add(10 * time.Second)
		for view.User("bad", "mallory") != door.Unknown {
			if time.Now().After(deadline) {
				t.Fatalf("the view still answers %d for mallory from the old version", view.User("bad", "mallory"))
			}
			_ = view.Refresh(ctxOf(t))
			time.Sleep(20 * time.Millisecond)
		}
		for _, step := range laterSteps {
			if v := d.Check(cfg, &door.Request{User: "mallory", Addr: outside}, step); v.Action != door.Block {
				t.Errorf("step %d, mallory after a failed rebuild: %+v, want block", step, v)
			}
		}
		acl(t, rdb, "+hmget")
		deadline = time.Now().Add(10 * time.Second)
		for view.User("bad", "mallory") != door.Maybe {
			if time.Now().After(deadline) {
				t.Fatal("the view never rebuilt the list once Redis answered")
			}
			_ = view.Refresh(ctxOf(t))
			time.Sleep(20 * time.Millisecond)
		}
		if v := d.Check(cfg, &door.Request{User: "alice", Addr: outside}, door.Status); v.Action != door.Queue {
			t.Errorf("alice after the rebuild: %+v, want queue", v)
		}
	})
}
