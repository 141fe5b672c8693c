package node_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/web/protect"
)

// limited returns an open sale with the given limits JSON object.
func limited(limits map[string]any) map[string]any {
	s := openSale(10, 1, 0, 0, 1000)
	s["limits"] = limits
	return s
}

// rate is a limits rate that refills too slowly to matter in a test.
func rate(burst int) map[string]any { return map[string]any{"per_second": 0.001, "burst": burst} }

// wantRateLimited checks an honest 429: code, Retry-After, and which
// budget ran out.
func wantRateLimited(t *testing.T, a nodetest.Answer, what string) {
	t.Helper()
	ra, err := strconv.Atoi(a.Header.Get("Retry-After"))
	if a.Status != http.StatusTooManyRequests || nodetest.Str(a.Body, "code") != "rate_limited" || err != nil || ra < 1 ||
		!strings.Contains(nodetest.Str(a.Body, "detail"), what) || a.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("got %d %s Retry-After %q, want 429 rate_limited about %q with Retry-After", a.Status, a.Raw, a.Header.Get("Retry-After"), what)
	}
}

func join(t *testing.T, n *node.Node, ev string, hdr map[string]string) nodetest.Answer {
	t.Helper()
	return nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/join", hdr, nil)
}

// TestJoinLimitEachDimension spends each join budget of a node on a real
// redis-server: user, device, IP (through a trusted proxy) and event; the
// next join is 429 with Retry-After and the neighbours are untouched.
func TestJoinLimitEachDimension(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TrustedProxies: []string{"127.0.0.1"}}))
	off := map[string]any{"per_second": -1}
	nodetest.CreateSale(t, n, "by-user", limited(map[string]any{"join": map[string]any{"user": rate(2)}}))
	byDevice := limited(map[string]any{"join": map[string]any{"user": off, "device": rate(2)}})
	byDevice["signals"] = map[string]any{"device": map[string]any{"source": "proxy_header"}}
	nodetest.CreateSale(t, n, "by-device", byDevice)
	// The device signed by the shop: a bare X-Device-ID, new on each
	// join, is not the device (it once keyed the budget: every join a
	// fresh one).
	signed := limited(map[string]any{"join": map[string]any{"user": off, "device": rate(2)}})
	signed["signals"] = map[string]any{"device": map[string]any{"source": "signed_header", "header": "X-Shop-Device"}}
	signed["shop"] = map[string]any{"secret": shopSecret}
	nodetest.CreateSale(t, n, "by-signed-device", signed)
	shopDevice := func(user, d string) string {
		return protect.SignSignal(shopSecret, time.Now(), "by-signed-device", user, "device", d)
	}
	// A sale without a device signal counts no device at all.
	nodetest.CreateSale(t, n, "no-device", limited(map[string]any{"join": map[string]any{"user": off, "device": rate(1)}}))
	nodetest.CreateSale(t, n, "by-ip", limited(map[string]any{"join": map[string]any{"user": off, "ip": rate(2)}}))
	nodetest.CreateSale(t, n, "by-event", limited(map[string]any{"join": map[string]any{"user": off, "event": rate(3)}}))
	h := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	steps := []struct {
		ev   string
		hdr  map[string]string
		want string // "" for 200, else the budget named by the 429
	}{
		{"by-user", h("X-User-ID", "ann"), ""},
		{"by-user", h("X-User-ID", "ann"), ""},
		{"by-user", h("X-User-ID", "ann"), "per user"},
		{"by-user", h("X-User-ID", "ben"), ""},
		{"by-device", h("X-User-ID", "d1", "X-Device-ID", "phone-1"), ""},
		{"by-device", h("X-User-ID", "d2", "X-Device-ID", "phone-1"), ""},
		{"by-device", h("X-User-ID", "d3", "X-Device-ID", "phone-1"), "per device"},
		{"by-device", h("X-User-ID", "d3", "X-Device-ID", "phone-2"), ""},
		{"by-signed-device", h("X-User-ID", "s1", "X-Device-ID", "fresh-1", "X-Shop-Device", shopDevice("s1", "phone-1")), ""},
		{"by-signed-device", h("X-User-ID", "s2", "X-Device-ID", "fresh-2", "X-Shop-Device", shopDevice("s2", "phone-1")), ""},
		{"by-signed-device", h("X-User-ID", "s3", "X-Device-ID", "fresh-3", "X-Shop-Device", shopDevice("s3", "phone-1")), "per device"},
		{"by-signed-device", h("X-User-ID", "s3", "X-Device-ID", "fresh-4", "X-Shop-Device", shopDevice("s3", "phone-2")), ""},
		{"no-device", h("X-User-ID", "n1", "X-Device-ID", "phone-1"), ""},
		{"no-device", h("X-User-ID", "n2", "X-Device-ID", "phone-1"), ""},
		{"by-ip", h("X-User-ID", "i1", "X-Forwarded-For", "198.51.100.1"), ""},
		{"by-ip", h("X-User-ID", "i2", "X-Forwarded-For", "198.51.100.1"), ""},
		{"by-ip", h("X-User-ID", "i3", "X-Forwarded-For", "198.51.100.1"), "per ip"},
		{"by-ip", h("X-User-ID", "i3", "X-Forwarded-For", "203.0.113.5, 198.51.100.1"), "per ip"}, // a forged left entry changes nothing
		{"by-ip", h("X-User-ID", "i3", "X-Forwarded-For", "198.51.100.2"), ""},
		{"by-event", h("X-User-ID", "e1"), ""},
		{"by-event", h("X-User-ID", "e2"), ""},
		{"by-event", h("X-User-ID", "e3"), ""},
		{"by-event", h("X-User-ID", "e4"), "per event"},
		{"by-user", h("X-User-ID", "e4"), ""}, // another event's budget
	}
	for i, s := range steps {
		a := join(t, n, s.ev, s.hdr)
		if s.want == "" {
			if a.Status != http.StatusOK {
				t.Fatalf("step %d %s %v: %d %s, want 200", i, s.ev, s.hdr, a.Status, a.Raw)
			}
			continue
		}
		wantRateLimited(t, a, "join requests "+s.want)
	}
	// A refused join minted nothing.
	if got := r.Client(t).Get(context.Background(), "ar:{by-event}:seq").Val(); got != "3" {
		t.Errorf("by-event handed out %s sequence numbers, want 3", got)
	}
}

// TestGlobalJoinLimit: the node's global budget spans events.
func TestGlobalJoinLimit(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), GlobalJoinRate: 0.002})) // burst 1
	nodetest.CreateSale(t, n, "g1", openSale(10, 1, 0, 0, 1000))
	nodetest.CreateSale(t, n, "g2", openSale(10, 1, 0, 0, 1000))
	if a := join(t, n, "g1", map[string]string{"X-User-ID": "first"}); a.Status != http.StatusOK {
		t.Fatalf("first join: %d %s", a.Status, a.Raw)
	}
	wantRateLimited(t, join(t, n, "g2", map[string]string{"X-User-ID": "second"}), "join requests per global")
}

// TestSpoofedForwardedFor: from a peer that is not a trusted proxy,
// X-Forwarded-For does not change the address the limiter counts.
func TestSpoofedForwardedFor(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}) // no trusted proxies; the default identity ignores X-User-ID
	nodetest.CreateSale(t, n, "spoof", limited(map[string]any{"join": map[string]any{"ip": rate(3)}}))
	for i := range 3 {
		a := join(t, n, "spoof", map[string]string{"X-User-ID": fmt.Sprint("s", i), "X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i)})
		if a.Status != http.StatusOK {
			t.Fatalf("join %d: %d %s", i, a.Status, a.Raw)
		}
	}
	wantRateLimited(t, join(t, n, "spoof", map[string]string{"X-User-ID": "s9", "X-Forwarded-For": "203.0.113.99"}), "join requests per ip")
}

// TestLimitsHotUpdate changes an event's limits through the admin API
// while it runs: the node that took the PUT applies them at once, another
// node on the same Redis within its refresh tick, and turning a limit off
// lifts it.
func TestLimitsHotUpdate(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n1 := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	n2 := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), AdminToken: n1.AdminToken}))
	nodetest.CreateSale(t, n1, "hot", limited(map[string]any{"join": map[string]any{"user": map[string]any{"per_second": -1}}}))
	admin := map[string]string{"Authorization": "Bearer " + n1.AdminToken}
	for range 5 {
		if a := join(t, n1, "hot", map[string]string{"X-User-ID": "eager"}); a.Status != http.StatusOK {
			t.Fatalf("join without a user limit: %d %s", a.Status, a.Raw)
		}
	}
	put := func(body string) {
		t.Helper()
		if a := nodetest.Call(t, http.MethodPut, n1.URL()+"/admin/events/hot", admin, []byte(body)); a.Status != http.StatusOK {
			t.Fatalf("PUT %s: %d %s", body, a.Status, a.Raw)
		}
	}
	put(`{"limits":{"join":{"user":{"per_second":0.001,"burst":1}}}}`)
	if a := join(t, n1, "hot", map[string]string{"X-User-ID": "eager"}); a.Status != http.StatusOK {
		t.Fatalf("first join under the new limit: %d %s", a.Status, a.Raw)
	}
	wantRateLimited(t, join(t, n1, "hot", map[string]string{"X-User-ID": "eager"}), "per user")
	// The other node refreshes its view within a tick: the shared bucket
	// is already spent there too.
	nodetest.WaitFor(t, "node 2 to apply the limit", 5*time.Second, func() bool {
		return join(t, n2, "hot", map[string]string{"X-User-ID": "eager"}).Status == http.StatusTooManyRequests
	})
	put(`{"limits":{"join":{"user":{"per_second":-1}}}}`)
	if a := join(t, n1, "hot", map[string]string{"X-User-ID": "eager"}); a.Status != http.StatusOK {
		t.Fatalf("join after the limit was turned off: %d %s", a.Status, a.Raw)
	}
	got := nodetest.Call(t, http.MethodGet, n1.URL()+"/admin/events/hot", admin, nil)
	if !strings.Contains(string(got.Raw), `"user":{"per_second":-1,"burst":0}`) {
		t.Errorf("admin view %s: want the user limit shown as off", got.Raw)
	}
	if a := nodetest.Call(t, http.MethodPut, n1.URL()+"/admin/events/hot", admin, []byte(`{"limits":{"pow":{"bits":99}}}`)); a.Status != http.StatusBadRequest {
		t.Errorf("invalid limits: %d %s, want 400", a.Status, a.Raw)
	}
}
