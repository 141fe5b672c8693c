package node_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// refuseListEntries makes Redis refuse the default user every key under
// ar:list: (the lists' entries and locks), and nothing else: its key
// patterns allow every key that does not start with it.
func refuseListEntries(t *testing.T, rdb *redis.Client) {
	t.Helper()
	args := []any{"ACL", "SETUSER", "default", "resetkeys", "~[^a]*"}
	const p = "ar:list:"
	for i := 1; i < len(p); i++ {
		args = append(args, "~"+p[:i], "~"+p[:i]+"[^"+p[i:i+1]+"]*")
	}
	if err := rdb.Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("ACL: %v", err)
	}
	if err := rdb.HGet(context.Background(), "ar:list:{x}:e", "f").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("Redis still reads a list's entries: %v", err)
	}
	if err := rdb.HGetAll(context.Background(), "ar:lists:meta").Err(); err != nil {
		t.Fatalf("Redis refuses the lists' versions too: %v", err)
	}
}

// TestDoorColdNodeRefusesTheBlocked: a node that starts while Redis
// refuses to read the lists' entries does not hold its sale's block
// list. It reports not ready, and it does not take the list for "not on
// it": a caller admitted before they were listed is refused 403 blocked
// at their status poll, the gate and the claim; at the join the join
// script's exact copy decides (the listed caller refused, another let
// in). Once Redis answers, the node is ready and its filter answers.
func TestDoorColdNodeRefusesTheBlocked(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	cfg := nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), DataDir: t.TempDir()}) // shared secrets and keys
	a := nodetest.Start(t, cfg)
	ctx := context.Background()
	if _, err := a.Lists.Create(ctx, "resellers", "user"); err != nil {
		t.Fatal(err)
	}
	sale := openSale(10, 1, 0, 0, 100)
	sale["door"] = map[string]any{"block_lists": []string{"resellers"}}
	nodetest.CreateSale(t, a, "cold", sale)
	token := nodetest.AdmitUser(t, a, "cold", "mallory")
	ticket := nodetest.Str(nodetest.Call(t, http.MethodPost, a.URL()+"/events/cold/join", user("mallory"), nil).Body, "ticket")
	if token == "" || ticket == "" {
		t.Fatal("mallory was not admitted before she was listed")
	}
	if _, err := a.Lists.Add(ctx, "resellers", "mallory"); err != nil {
		t.Fatal(err)
	}
	rdb := r.Client(t)
	refuseListEntries(t, rdb)

	b := nodetest.Start(t, cfg)
	if s := nodetest.Call(t, http.MethodGet, b.URL()+"/readyz", nil, nil); s.Status != http.StatusServiceUnavailable {
		t.Errorf("a node without its lists is ready: %d %s", s.Status, s.Raw)
	}
	base := b.URL() + "/events/cold"
	refused := func(when string) {
		t.Helper()
		for _, c := range []struct {
			name, method, path string
			hdr                map[string]string
		}{
			{"status", http.MethodGet, "/status", map[string]string{"Authorization": "Bearer " + ticket}},
			{"gate", http.MethodGet, "/gate", map[string]string{"Authorization": "Bearer " + token}},
			{"claim", http.MethodPost, "/claim", with(user("mallory"), "Authorization", "Bearer "+token)},
			{"join", http.MethodPost, "/join", user("mallory")},
		} {
			a := nodetest.Call(t, c.method, base+c.path, c.hdr, nil)
			if a.Status != http.StatusForbidden || nodetest.Str(a.Body, "code") != "blocked" {
				t.Errorf("%s: mallory's %s: %d %s, want 403 blocked", when, c.name, a.Status, a.Raw)
			}
		}
	}
	refused("the list not held")
	if j := nodetest.Call(t, http.MethodPost, base+"/join", user("alice"), nil); j.Status != http.StatusOK {
		t.Errorf("alice's join, the list not held: %d %s, want 200 (the join script decides)", j.Status, j.Raw)
	}

	if err := rdb.Do(ctx, "ACL", "SETUSER", "default", "resetkeys", "~*").Err(); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "the node to be ready once Redis answers", 20*time.Second, func() bool {
		return nodetest.Call(t, http.MethodGet, b.URL()+"/readyz", nil, nil).Status == http.StatusOK
	})
	refused("the list held")
	j := nodetest.Call(t, http.MethodPost, base+"/join", user("alice"), nil)
	if s := nodetest.Call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + nodetest.Str(j.Body, "ticket")}, nil); s.Status != http.StatusOK {
		t.Errorf("alice's status, the list held: %d %s, want 200", s.Status, s.Raw)
	}
}
