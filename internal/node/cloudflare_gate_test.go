package node_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
)

// TestCloudflareWorkerAsksTheGate runs the Worker in miniflare in front of
// a stub shop and a real node whose sale has a door: a block list, and
// rules on the path, the method and the client's address. On the paths
// in GATE_PATHS the Worker asks the node's gate about every request, and
// the door applies as it does behind nginx:
//   - a user put on the block list after their admission token was issued
//     is refused 403 blocked with that valid token (the gate's
//     problem+json, never stored), and nothing reaches the shop; taken
//     off the list, the next request passes: the Worker keeps no verdict;
//   - on a path outside GATE_PATHS the same token passes (the offline
//     verifier's limit, documented);
//   - an admitted user passes as the token's sub, never the client's own
//     X-User-ID; an anonymous visitor goes where the node's gate says;
//   - a rule's bypass on a path lets an anonymous visitor through naming
//     nobody; a rule on the method blocks a DELETE; a rule on the network
//     blocks the address in CF-Connecting-IP, which the node believes from
//     the Worker (ANTEROOM_TRUSTED_PROXIES);
//   - another sale's eligibility list refuses a holder not on it 403
//     not_eligible with the sale's message;
//   - a gate that cannot be reached fails closed (503, logged), or open
//     (the shop, naming nobody) while FAIL_OPEN_UNTIL is ahead;
//   - a GATE_PATHS entry that is not a path is a wrong setting.
func TestCloudflareWorkerAsksTheGate(t *testing.T) {
	nodeBin := cfWorkerDeps(t)
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	const issuer, audience = "https://queue.shop.example", "anteroom-claim"
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir, Issuer: issuer,
		TrustedProxies: []string{"127.0.0.1"}})
	ctx := context.Background()
	for _, l := range []string{"resellers", "registered"} {
		if _, err := n.Lists.Create(ctx, l, lists.KindUser); err != nil {
			t.Fatal(err)
		}
	}
	sale := openSale(10, 1, 0, 0, 1000)
	sale["door"] = map[string]any{"block_lists": []string{"resellers"}, "rules": []map[string]string{
		{"name": "health", "when": `request.path == "/drop/health"`, "then": "bypass"},
		{"name": "no-delete", "when": `request.method == "DELETE"`, "then": "block"},
		{"name": "bad-net", "when": `in_network(request.ip, "203.0.113.0/24")`, "then": "block"},
	}}
	nodetest.CreateSale(t, n, "drop", sale)
	members := openSale(10, 1, 0, 0, 1000)
	members["door"] = map[string]any{"eligible_lists": []string{"registered"}, "not_eligible_message": "pre-registered members only"}
	nodetest.CreateSale(t, n, "members", members)

	keys, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ev, user string) string {
		raw, _, err := tokens.NewIssuer(keys, tokens.IssuerConfig{Issuer: issuer, Audience: audience}).Issue(ev, user, 1, 5*time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	mallory, alice := issue("drop", "mallory"), issue("drop", "alice")
	// Listed after the token was issued: a filter's "maybe", which the gate refuses.
	if _, err := n.Lists.Add(ctx, "resellers", "mallory"); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "the node's view to hold mallory", 20*time.Second, func() bool {
		return n.ListView.User("resellers", "mallory") == door.Maybe
	})

	shop := &cfShop{}
	shopSrv := httptest.NewServer(shop)
	t.Cleanup(shopSrv.Close)
	vars := func(extra ...string) map[string]string {
		v := map[string]string{"ANTEROOM_URL": n.URL(), "EVENT": "drop", "ISSUER": issuer, "AUDIENCE": audience, "GATE_PATHS": "/drop/, /cart"}
		for i := 0; i+1 < len(extra); i += 2 {
			v[extra[i]] = extra[i+1]
		}
		return v
	}
	w := startCFWorker(t, nodeBin, vars(), shopSrv.URL)
	bearer := func(tok string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tok, "X-User-ID": "mallory"}
	}
	lastUser := func() string {
		users, _, _ := shop.seen()
		if len(users) == 0 {
			return "(none)"
		}
		return users[len(users)-1]
	}
	shopCount := func() int { users, _, _ := shop.seen(); return len(users) }
	problem := func(body []byte) (code, detail string) {
		var p struct{ Code, Detail string }
		_ = json.Unmarshal(body, &p)
		return p.Code, p.Detail
	}

	// A blocked user with a valid admission token: refused when the gate is asked.
	for _, hdr := range []map[string]string{bearer(mallory), {"Cookie": "anteroom_a_drop=" + mallory}} {
		before := shopCount()
		resp, body := getVia(t, browserish(t), w.url+"drop/item?a=1", hdr)
		if code, _ := problem(body); resp.StatusCode != http.StatusForbidden || code != "blocked" {
			t.Fatalf("a blocked user's valid token on a gate path: %d %s, want 403 blocked\n%s", resp.StatusCode, body, w.log)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("refusal Cache-Control %q, want no-store", cc)
		}
		if shopCount() != before {
			t.Fatalf("a refused request reached the shop")
		}
	}
	// The offline verifier's limit: off the gate's paths, the same token passes.
	if resp, body := getVia(t, browserish(t), w.url+"other/item", bearer(mallory)); resp.StatusCode != http.StatusOK || string(body) != "shop page" || lastUser() != "mallory" {
		t.Fatalf("a blocked user's valid token off the gate's paths: %d %q as %q, want the shop as mallory (checked offline)", resp.StatusCode, body, lastUser())
	}
	// An admitted user passes as the token's sub; "/cart" is the second prefix.
	for _, path := range []string{"drop/item", "cart/checkout"} {
		if resp, body := getVia(t, browserish(t), w.url+path, bearer(alice)); resp.StatusCode != http.StatusOK || string(body) != "shop page" || lastUser() != "alice" {
			t.Fatalf("an admitted user on %s: %d %q as %q, want the shop as alice\n%s", path, resp.StatusCode, body, lastUser(), w.log)
		}
	}
	// Anonymous: where the node's gate sends nginx.
	resp, _ := getVia(t, browserish(t), w.url+"drop/item?a=1&b=2", map[string]string{"X-User-ID": "alice"})
	if want := "/e/drop?return=%2Fdrop%2Fitem%3Fa%3D1%26b%3D2"; resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != want || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("anonymous on a gate path: %d to %q, want 302 to %s, no-store", resp.StatusCode, resp.Header.Get("Location"), want)
	}
	// Rules on the request: the path, the method, the client's address.
	if resp, body := getVia(t, browserish(t), w.url+"drop/health", map[string]string{"X-User-ID": "alice"}); resp.StatusCode != http.StatusOK || string(body) != "shop page" || lastUser() != "" {
		t.Fatalf("a bypassed path, anonymous: %d %q as %q, want the shop naming nobody", resp.StatusCode, body, lastUser())
	}
	del, err := http.NewRequest(http.MethodDelete, w.url+"drop/item", nil)
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
	netHdr := bearer(alice)
	netHdr["CF-Connecting-IP"] = "203.0.113.9"
	if resp, body := getVia(t, browserish(t), w.url+"drop/item", netHdr); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an address in a blocked network: %d %s, want 403 blocked", resp.StatusCode, body)
	}
	netHdr["CF-Connecting-IP"] = "198.51.100.9"
	if resp, _ := getVia(t, browserish(t), w.url+"drop/item", netHdr); resp.StatusCode != http.StatusOK || lastUser() != "alice" {
		t.Fatalf("an address in no blocked network: %d as %q, want the shop as alice", resp.StatusCode, lastUser())
	}

	// Off the list: the next request passes (nothing kept).
	if _, err := n.Lists.Remove(ctx, "resellers", "mallory"); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "mallory to pass once off the list", 20*time.Second, func() bool {
		resp, _ := getVia(t, browserish(t), w.url+"drop/item", bearer(mallory))
		return resp.StatusCode == http.StatusOK && lastUser() == "mallory"
	})

	// What a gate call adds (logged: timing is not asserted on a shared machine).
	median := func(path string) time.Duration {
		var ds []time.Duration
		for range 21 {
			start := time.Now()
			getVia(t, http.DefaultClient, w.url+path, bearer(alice))
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	t.Logf("an admitted request's median over 21, through miniflare on loopback: asking the gate %s, offline %s", median("drop/item"), median("other/item"))

	// Another sale's eligibility list: its message reaches the visitor.
	wm := startCFWorker(t, nodeBin, vars("EVENT", "members", "GATE_PATHS", "/"), shopSrv.URL)
	resp, body := getVia(t, browserish(t), wm.url+"members/item", bearer(issue("members", "bob")))
	if code, detail := problem(body); resp.StatusCode != http.StatusForbidden || code != "not_eligible" || detail != "pre-registered members only" {
		t.Fatalf("a holder on no eligibility list: %d %s, want 403 not_eligible with the sale's message", resp.StatusCode, body)
	}

	// A gate that cannot be reached: closed, or open until the deadline.
	down := "http://" + closedPort(t)
	jwks := n.URL() + "/.well-known/jwks.json"
	wc := startCFWorker(t, nodeBin, vars("ANTEROOM_URL", down, "JWKS_URL", jwks), shopSrv.URL)
	before := shopCount()
	for _, hdr := range []map[string]string{bearer(alice), nil} {
		resp, _ := getVia(t, browserish(t), wc.url+"drop/item", hdr)
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("the gate unreachable: %d, want 503 with Retry-After", resp.StatusCode)
		}
	}
	if shopCount() != before {
		t.Fatalf("with the gate unreachable, a request reached the shop")
	}
	wc.waitLog(t, "says the gate cannot be asked", "cannot ask the gate of "+down, "refusing (fail closed)")
	if resp, _ := getVia(t, browserish(t), wc.url+"other/item", bearer(alice)); resp.StatusCode != http.StatusOK || lastUser() != "alice" {
		t.Fatalf("off the gate's paths with the gate down: %d as %q, want the shop as alice (offline)", resp.StatusCode, lastUser())
	}
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	wo := startCFWorker(t, nodeBin, vars("ANTEROOM_URL", down, "JWKS_URL", jwks, "FAIL_OPEN_UNTIL", until), shopSrv.URL)
	resp, body = getVia(t, browserish(t), wo.url+"drop/item", bearer(alice))
	if resp.StatusCode != http.StatusOK || string(body) != "shop page" || resp.Header.Get("X-Anteroom-Fail-Open") != until || lastUser() != "" {
		t.Fatalf("the gate unreachable, failing open: %d %q %q as %q, want the shop naming nobody", resp.StatusCode, body, resp.Header.Get("X-Anteroom-Fail-Open"), lastUser())
	}

	bad := startCFWorker(t, nodeBin, vars("GATE_PATHS", "drop/"), shopSrv.URL)
	if resp, _ := getVia(t, browserish(t), bad.url+"drop/item", bearer(alice)); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GATE_PATHS=drop/: %d, want 503 (a wrong setting)", resp.StatusCode)
	}
	bad.waitLog(t, "names the wrong setting", `GATE_PATHS: "drop/" is not a path prefix`)
}

// TestCloudflareWorkerGateRoom: a safety-net room behind the Worker with
// GATE_PATHS "/": the room's gate admits an anonymous visitor at once,
// and the Worker passes its admission cookie on with the site's answer
// (as nginx-safety-net.conf does), so the visitor's next request is the
// same admission (the same user at the site), not a new entrance; the
// room's block rule refuses 403. Before the cookie was passed on, each
// request took a new place under a new one-time id.
func TestCloudflareWorkerGateRoom(t *testing.T) {
	nodeBin := cfWorkerDeps(t)
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	const issuer, audience = "https://queue.shop.example", "anteroom-claim"
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: t.TempDir(), Issuer: issuer,
		TrustedProxies: []string{"127.0.0.1"}})
	room := safetyNet(100, 300, 100)
	room["door"] = map[string]any{"rules": []map[string]string{{"name": "no-admin", "when": `request.path.startsWith("/admin")`, "then": "block"}}}
	nodetest.CreateSale(t, n, "site", room)
	shop := &cfShop{}
	shopSrv := httptest.NewServer(shop)
	t.Cleanup(shopSrv.Close)
	w := startCFWorker(t, nodeBin, map[string]string{
		"ANTEROOM_URL": n.URL(), "EVENT": "site", "ISSUER": issuer, "AUDIENCE": audience, "GATE_PATHS": "/",
	}, shopSrv.URL)
	b := browserish(t)
	var first string
	for i := range 3 {
		resp, body := getVia(t, b, w.url+"page", nil)
		users, _, _ := shop.seen()
		if resp.StatusCode != http.StatusOK || string(body) != "shop page" || len(users) != i+1 || users[i] == "" {
			t.Fatalf("visit %d: %d %q, the site saw %q, want the site as an admitted visitor\n%s", i+1, resp.StatusCode, body, users, w.log)
		}
		if i == 0 {
			first = users[0]
			if jarCookie(t, b, w.url, "anteroom_a_site") == "" {
				t.Fatalf("the room's admission cookie did not reach the visitor: %v", resp.Header.Values("Set-Cookie"))
			}
		} else if users[i] != first {
			t.Fatalf("visit %d as %q, want %q again (the admission the first visit got)", i+1, users[i], first)
		}
	}
	if resp, _ := getVia(t, b, w.url+"admin/x", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a path the room's rule blocks: %d, want 403", resp.StatusCode)
	}
}
