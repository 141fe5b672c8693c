package node_test

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/lifecycle"
	"github.com/anteroom/anteroom/tokens"
)

// yourTurnSale starts a node on a real redis-server and NATS with a
// webhook receiver, creates sale ev (sale's fields, a your_turn webhook
// added) and returns the node, the receiver and the ticket secret.
func yourTurnSale(t *testing.T, ev string, sale map[string]any) (*node.Node, *hookLog, []byte) {
	t.Helper()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), WebhookAllowHTTP: true, TicketSecret: secret}))
	const hookSecret = "whsec-your-turn-test-0123"
	hooks := &hookLog{secret: hookSecret, tries: map[string]int{}, events: map[string]lifecycle.Event{}}
	srv := httptest.NewServer(hooks)
	t.Cleanup(srv.Close)
	sale["webhooks"] = []map[string]any{{"url": srv.URL + "/turns", "secret": hookSecret, "events": []string{"your_turn"}}}
	nodetest.CreateSale(t, n, ev, sale)
	return n, hooks, secret
}

// checkTurns checks that hooks holds one your_turn per user of want
// (user → lane index) and none for anyone else, each with the user's lane and
// positions within each queue distinct.
func checkTurns(t *testing.T, hooks *hookLog, want map[string]int) {
	t.Helper()
	seen := map[string]string{}     // user -> event id
	places := map[[2]int64]string{} // (lane, position) -> user
	for _, e := range hooks.byType(lifecycle.YourTurn) {
		u, _ := e.Data["user"].(string)
		lane, _ := e.Data["lane"].(float64)
		pos, _ := e.Data["position"].(float64)
		if prev, dup := seen[u]; dup {
			t.Errorf("user %q has two your_turn events: %s and %s", u, prev, e.ID)
		}
		seen[u] = e.ID
		wl, ok := want[u]
		if !ok {
			t.Errorf("your_turn %s for %q, who did not join", e.ID, u)
			continue
		}
		if int(lane) != wl {
			t.Errorf("your_turn %s for %q: lane %v, want %d", e.ID, u, e.Data["lane"], wl)
		}
		k := [2]int64{int64(lane), int64(pos)}
		if other, dup := places[k]; dup || pos < 1 {
			t.Errorf("your_turn %s: lane %d position %v (also %q's)", e.ID, int(lane), e.Data["position"], other)
		}
		places[k] = u
	}
	for u := range want {
		if _, ok := seen[u]; !ok {
			t.Errorf("no your_turn for %q", u)
		}
	}
}

// TestYourTurnShardedSale: a sale of 4 join shards, window members and
// later joiners: every admitted person gets exactly one your_turn event,
// naming them (the seq → user record is kept on each shard's slot) with
// their shard and the shard's seq. This sale could not ask for your_turn
// before (400). Web Push is off on this node: its route answers 404.
func TestYourTurnShardedSale(t *testing.T) {
	sale := openSale(100, 1, 2*time.Second, 1, 50)
	sale["join_shards"] = 4
	n, hooks, _ := yourTurnSale(t, "sharded", sale)
	want := map[string]int{}
	seqs := map[string]float64{}
	joinAs := func(u string) {
		j := join(t, n, "sharded", map[string]string{"X-User-ID": u})
		if j.Status != http.StatusOK {
			t.Fatalf("join %s: %d %s", u, j.Status, j.Raw)
		}
		want[u], seqs[u] = 0, j.Body["seq"].(float64)
	}
	for i := range 12 {
		joinAs(fmt.Sprint("w", i))
	}
	// This node has no VAPID key: Web Push is off, its routes 404.
	j := join(t, n, "sharded", map[string]string{"X-User-ID": "w0"})
	problemOK(t, nodetest.Call(t, http.MethodPost, n.URL()+"/events/sharded/push",
		map[string]string{"Authorization": "Bearer " + nodetest.Str(j.Body, "ticket"), "Content-Type": "application/json"}, []byte(`{}`)), http.StatusNotFound, "not_found")
	nodetest.WaitFor(t, "the window to close", 20*time.Second, func() bool {
		return nodetest.Call(t, http.MethodGet, n.URL()+"/events/sharded", nil, nil).Body["window_size"] != nil
	})
	for i := range 12 {
		joinAs(fmt.Sprint("l", i))
	}
	nodetest.WaitFor(t, "your_turn for everyone", 60*time.Second, func() bool { return len(hooks.byType(lifecycle.YourTurn)) >= len(want) })
	checkTurns(t, hooks, want)
	for _, e := range hooks.byType(lifecycle.YourTurn) {
		u, _ := e.Data["user"].(string)
		if _, ok := e.Data["shard"].(float64); !ok || e.Data["seq"] != seqs[u] {
			t.Errorf("your_turn %s for %q: shard %v seq %v, want a shard and seq %v", e.ID, u, e.Data["shard"], e.Data["seq"], seqs[u])
		}
	}
}

// TestYourTurnLaneMembers: a sale with a lane that starts before it: lane
// members (by invite) and plain joiners each get exactly one your_turn,
// the lane's members with lane 1 and their position in the lane.
func TestYourTurnLaneMembers(t *testing.T) {
	sale := openSale(100, 1, 3*time.Second, 0, 20)
	sale["lanes"] = []any{map[string]any{"name": "members", "share": 0.5, "starts_at": time.Now().UTC().Truncate(time.Second).Add(-time.Second)}}
	n, hooks, secret := yourTurnSale(t, "laned", sale)
	inv, err := tokens.NewInvites(secret)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for i := range 6 {
		u := fmt.Sprint("m", i)
		j := join(t, n, "laned", map[string]string{"X-User-ID": u, "X-Invite-Token": inv.SignLane("laned", u, "members", time.Now().Add(time.Hour))})
		if j.Status != http.StatusOK {
			t.Fatalf("join %s: %d %s", u, j.Status, j.Raw)
		}
		want[u] = 1
	}
	for i := range 6 {
		u := fmt.Sprint("p", i)
		if j := join(t, n, "laned", map[string]string{"X-User-ID": u}); j.Status != http.StatusOK {
			t.Fatalf("join %s: %d %s", u, j.Status, j.Raw)
		}
		want[u] = 0
	}
	nodetest.WaitFor(t, "your_turn for everyone", 60*time.Second, func() bool { return len(hooks.byType(lifecycle.YourTurn)) >= len(want) })
	checkTurns(t, hooks, want)
}
