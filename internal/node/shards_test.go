package node_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestShardedQueueAcrossNodes runs a sale of 16 join shards on three nodes
// and a 3-master Redis Cluster: a repeated join (on another node) returns
// the same ticket; once settled, every node serves the same position for
// every ticket; positions are a bijection onto 1..N with the window first;
// window positions are π(offset(shard) + seq) from the revealed seed and
// the published shard window sizes; later joiners follow the window.
func TestShardedQueueAcrossNodes(t *testing.T) {
	rc := testenv.StartRedisCluster(t, 3)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32) // every node signs tickets alike
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	var nodes []*node.Node
	for range 3 {
		nodes = append(nodes, nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisClusterAddrs: rc.Addrs(), NATSURL: ns.URL(), TicketSecret: secret})))
	}
	const shards, members, later = 16, 40, 60
	sale := openSale(1000, 1, 2*time.Second, 1, 5)
	sale["join_shards"] = shards
	nodetest.CreateSale(t, nodes[0], "spread", sale)
	for _, n := range nodes {
		nodetest.WaitFor(t, "every node to know the sale", 10*time.Second, func() bool {
			return nodetest.Call(t, http.MethodGet, n.URL()+"/events/spread", nil, nil).Status == http.StatusOK
		})
	}
	tickets := map[string]string{} // user -> ticket
	seqs := map[string]int64{}
	join := func(i int, user, wantState string) {
		n := nodes[i%len(nodes)]
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/spread/join", map[string]string{"X-User-ID": user}, nil)
		if j.Status != http.StatusOK || (wantState != "" && nodetest.Str(j.Body, "state") != wantState) {
			t.Fatalf("join %s: %d %s", user, j.Status, j.Raw)
		}
		again := nodetest.Call(t, http.MethodPost, nodes[(i+1)%len(nodes)].URL()+"/events/spread/join", map[string]string{"X-User-ID": user}, nil)
		if nodetest.Str(again.Body, "ticket") != nodetest.Str(j.Body, "ticket") {
			t.Fatalf("%s joined again on another node and got another ticket: %s", user, again.Raw)
		}
		tickets[user] = nodetest.Str(j.Body, "ticket")
		seqs[user] = int64(j.Body["seq"].(float64))
	}
	for i := range members {
		join(i, fmt.Sprint("w", i), "prequeue")
	}
	var pub nodetest.Answer
	nodetest.WaitFor(t, "the window to close", 10*time.Second, func() bool {
		pub = nodetest.Call(t, http.MethodGet, nodes[0].URL()+"/events/spread", nil, nil)
		return nodetest.Str(pub.Body, "seed") != ""
	})
	for i := range later {
		join(i, fmt.Sprint("l", i), "")
	}
	seed, err := queue.ParseSeedHex(nodetest.Str(pub.Body, "seed"))
	if err != nil {
		t.Fatal(err)
	}
	sizes, _ := pub.Body["shard_window_sizes"].([]any)
	if w := int64(pub.Body["window_size"].(float64)); w != members || len(sizes) != shards {
		t.Fatalf("window size %d, shard sizes %v: want %d over %d shards", w, sizes, members, shards)
	}
	perm, err := queue.NewPermutation(seed, members)
	if err != nil {
		t.Fatal(err)
	}
	positions := map[string]int64{}
	nodetest.WaitFor(t, "every later joiner's second to settle on every node", 20*time.Second, func() bool {
		for user, ticket := range tickets {
			var pos int64
			for _, n := range nodes {
				s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/spread/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
				p, ok := s.Body["position"].(float64)
				if !ok {
					return false
				}
				if pos != 0 && int64(p) != pos {
					t.Fatalf("%s: position %d on one node, %v on another", user, pos, p)
				}
				pos = int64(p)
			}
			positions[user] = pos
		}
		return true
	})
	seen := map[int64]string{}
	for user, pos := range positions {
		if prev, dup := seen[pos]; dup || pos < 1 || pos > members+later {
			t.Fatalf("%s: position %d (also %q), want a bijection onto 1..%d", user, pos, prev, members+later)
		}
		seen[pos] = user
		if user[0] == 'l' {
			if pos <= members {
				t.Errorf("later joiner %s has position %d inside the window", user, pos)
			}
			continue
		}
		s := queue.ShardOf(user, shards)
		var off int64
		for _, w := range sizes[:s] {
			off += int64(w.(float64))
		}
		if want := perm.Apply(off + seqs[user]); pos != want {
			t.Errorf("%s on shard %d, seq %d: position %d, verify computes π(%d) = %d", user, s, seqs[user], pos, off+seqs[user], want)
		}
	}
}

// TestShardedStatusIsFree checks with INFO commandstats that status calls
// on a sale of join shards cost Redis nothing: the node's view carries the
// shards' counts.
func TestShardedStatusIsFree(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Manual: true}))
	sale := openSale(100, 1, 0, 0, 5)
	sale["join_shards"] = 8
	nodetest.CreateSale(t, n, "freeshards", sale)
	var tickets []string
	for i := range 20 {
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/freeshards/join", map[string]string{"X-User-ID": fmt.Sprint("u", i)}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join: %d %s", j.Status, j.Raw)
		}
		tickets = append(tickets, nodetest.Str(j.Body, "ticket"))
	}
	nodetest.WaitFor(t, "the joiners' second to settle", 10*time.Second, func() bool {
		if err := n.Snapshots.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		sale, _ := n.Snapshots.Get("freeshards")
		return sale.Order != nil && sale.Order.Settled() == 20
	})
	before := r.CommandCount(t)
	for i := range 400 {
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/events/freeshards/status", map[string]string{"Authorization": "Bearer " + tickets[i%len(tickets)]}, nil)
		if a.Status != http.StatusOK || a.Body["position"] == nil {
			t.Fatalf("status: %d %s", a.Status, a.Raw)
		}
	}
	if after := r.CommandCount(t); after != before {
		t.Fatalf("400 status calls ran %d Redis commands, want 0", after-before)
	}
}
