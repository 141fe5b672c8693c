package node_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
)

// TestNginxGateDoor runs deploy/gateway/nginx.conf as written in a real
// nginx in front of a stub shop and a node in header identity mode (which
// believes X-User-ID from nginx, a trusted proxy), whose sale has a door.
// The gate applies it to the request nginx protects: a user put on the
// block list after their token was minted is refused 403 with that valid
// token; a rule's bypass on a path lets an anonymous visitor through
// naming nobody; a rule on the method refuses a DELETE. A client's own
// X-User-ID names nobody to the gate: before nginx.conf cleared it, a
// client naming the user a bypass rule lets through passed to the shop
// without an admission.
func TestNginxGateDoor(t *testing.T) {
	site, err := os.ReadFile("../../deploy/gateway/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir}))
	ctx := context.Background()
	if _, err := n.Lists.Create(ctx, "resellers", lists.KindUser); err != nil {
		t.Fatal(err)
	}
	sale := openSale(10, 1, 0, 0, 1000)
	sale["door"] = map[string]any{"block_lists": []string{"resellers"}, "rules": []map[string]string{
		{"name": "health", "when": `request.path == "/drop/health"`, "then": "bypass"},
		{"name": "partner", "when": `user == "partner"`, "then": "bypass"},
		{"name": "no-delete", "when": `request.method == "DELETE"`, "then": "block"},
	}}
	nodetest.CreateSale(t, n, "drop", sale)
	shop := &origin{}
	srv := httptest.NewServer(shop)
	t.Cleanup(srv.Close)
	conf := strings.Replace(string(site), "127.0.0.1:8080", strings.TrimPrefix(n.URL(), "http://"), 1)
	conf = strings.Replace(conf, "127.0.0.1:3000", strings.TrimPrefix(srv.URL, "http://"), 1)
	gw := testenv.StartNginx(t, conf)

	keys, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(user string) string {
		raw, _, err := tokens.NewIssuer(keys, tokens.IssuerConfig{}).Issue("drop", user, 1, 5*time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	mallory, alice := issue("mallory"), issue("alice")
	if _, err := n.Lists.Add(ctx, "resellers", "mallory"); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "the node's view to hold mallory", 20*time.Second, func() bool {
		return n.ListView.User("resellers", "mallory") == door.Maybe
	})
	seen := func() int { users, _ := shop.seen(); return len(users) }
	last := func() string { users, _ := shop.seen(); return users[len(users)-1] }

	before := seen()
	if resp, _ := getVia(t, browserish(t), gw.URL()+"/drop/item", map[string]string{"Cookie": "anteroom_a_drop=" + mallory}); resp.StatusCode != http.StatusForbidden || seen() != before {
		t.Fatalf("a blocked user's valid token through nginx: %d (shop saw %d more), want 403 and nothing", resp.StatusCode, seen()-before)
	}
	if resp, _ := getVia(t, browserish(t), gw.URL()+"/drop/item", map[string]string{"Authorization": "Bearer " + alice}); resp.StatusCode != http.StatusOK || last() != "alice" {
		t.Fatalf("an admitted user: %d as %q, want the shop as alice", resp.StatusCode, last())
	}
	if resp, _ := getVia(t, browserish(t), gw.URL()+"/drop/health", nil); resp.StatusCode != http.StatusOK || last() != "" {
		t.Fatalf("a bypassed path, anonymous: %d as %q, want the shop naming nobody", resp.StatusCode, last())
	}
	del, err := http.NewRequest(http.MethodDelete, gw.URL()+"/drop/item", nil)
	if err != nil {
		t.Fatal(err)
	}
	del.Header.Set("Authorization", "Bearer "+alice)
	dresp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if dresp.StatusCode != http.StatusForbidden {
		t.Fatalf("DELETE with a rule blocking it: %d, want 403", dresp.StatusCode)
	}
	before = seen()
	if resp, _ := getVia(t, browserish(t), gw.URL()+"/drop/item", map[string]string{"X-User-ID": "partner"}); resp.StatusCode != http.StatusFound || seen() != before {
		t.Fatalf("a client naming the bypassed user itself: %d (shop saw %d more), want 302 to the waiting room", resp.StatusCode, seen()-before)
	}
}
