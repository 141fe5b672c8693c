package node_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestNodeListViewFollowsChanges: a list made and changed through one
// node's Lists reaches another node's ListView within a few ticks, with
// no restart, and both hash ids under the deployment's one key.
func TestNodeListViewFollowsChanges(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	a := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	b := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := a.Lists.Create(ctx, "bots", "user"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Lists.Add(ctx, "bots", "mallory"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Lists.Create(ctx, "nets", "network"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Lists.Add(ctx, "nets", "203.0.113.0/24"); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "node b's view holds the lists", 20*time.Second, func() bool {
		return b.ListView.User("bots", "mallory") == door.Maybe && b.ListView.Addr("nets", netip.MustParseAddr("203.0.113.9")) == door.Present
	})
	if b.ListView.User("bots", "alice") != door.Absent || a.ListView.Hash("mallory") != b.ListView.Hash("mallory") {
		t.Fatal("node b's view answers a stranger, or the nodes hash differently")
	}
	if _, err := a.Lists.Remove(ctx, "bots", "mallory"); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "node b's view drops the removed id", 20*time.Second, func() bool {
		return b.ListView.User("bots", "mallory") == door.Absent
	})
}
