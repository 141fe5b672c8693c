package node_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestCaddySafetyNet runs deploy/gateway/Caddyfile as written in a real
// caddy in front of a safety-net room: see checkProxySafetyNet.
func TestCaddySafetyNet(t *testing.T) {
	checkProxySafetyNet(t, "Caddyfile", func(t *testing.T, conf string) string {
		return testenv.StartCaddy(t, conf).URL()
	})
}

// TestHAProxySafetyNet runs deploy/gateway/haproxy.cfg and
// anteroom-gate.lua as written in a real haproxy in front of a
// safety-net room: see checkProxySafetyNet.
func TestHAProxySafetyNet(t *testing.T) {
	lua, err := filepath.Abs("../../deploy/gateway/anteroom-gate.lua")
	if err != nil {
		t.Fatal(err)
	}
	checkProxySafetyNet(t, "haproxy.cfg", func(t *testing.T, conf string) string {
		return testenv.StartHAProxy(t, strings.ReplaceAll(conf, "/etc/haproxy/anteroom-gate.lua", lua)).URL()
	})
}

// checkProxySafetyNet runs the gateway configuration deploy/gateway/<file>
// (its upstreams replaced), started by start, when the sale "drop" it
// protects is a safety-net room, as nginx-safety-net.conf is tested
// (TestSafetyNetNginx): the gate's answer sets the admission cookie and
// the gateway must hand it to the browser with the shop's answer. A new
// visitor's first request reaches the shop at once, as the admission's
// subject, and the browser holds the admission cookie; the next requests
// carry it; past half the admission's life (10 s) the gate renews it and
// the browser holds the new one, for the same visitor; the shop's own
// answer is unchanged.
func checkProxySafetyNet(t *testing.T, file string, start func(t *testing.T, conf string) string) {
	raw, err := os.ReadFile(filepath.Join("../../deploy/gateway", file))
	if err != nil {
		t.Fatal(err)
	}
	site := string(raw)
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TrustedProxies: []string{"127.0.0.1"}})
	shop := &origin{}
	srv := httptest.NewServer(shop)
	t.Cleanup(srv.Close)
	conf := strings.ReplaceAll(site, "127.0.0.1:8080", strings.TrimPrefix(n.URL(), "http://"))
	conf = strings.ReplaceAll(conf, "127.0.0.1:3000", strings.TrimPrefix(srv.URL, "http://"))
	gw := start(t, conf)
	nodetest.CreateSale(t, n, "drop", safetyNet(5, 10, 100))
	afterTick(t, n, "drop")

	const page = "/drop/shoes?size=42"
	v := browserish(t)
	resp, body := getVia(t, v, gw+page, map[string]string{"X-User-ID": "mallory"})
	if resp.StatusCode != http.StatusOK || string(body) != "shop page" {
		t.Fatalf("a new visitor under the room's threshold: %d %q, want the shop at once", resp.StatusCode, body)
	}
	first := jarCookie(t, v, gw, "anteroom_a_drop")
	if first == "" {
		t.Fatalf("no admission cookie reached the browser (Set-Cookie %q)", resp.Header.Values("Set-Cookie"))
	}
	user := tokenSub(t, first)
	users, paths := shop.seen()
	if len(users) != 1 || users[0] != user || user == "mallory" || paths[0] != page {
		t.Fatalf("the shop saw users %q paths %q, want %s as the admission's subject %s", users, paths, page, user)
	}
	if resp, _ := getVia(t, v, gw+"/drop/cart", nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("the next request, early in the admission: %d Set-Cookie %q, want the shop and no new cookie", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	// Past half the admission's life the gate renews it.
	nodetest.WaitFor(t, "the renewed admission cookie", 15*time.Second, func() bool {
		resp, body := getVia(t, v, gw+"/drop/cart", nil)
		if resp.StatusCode != http.StatusOK || string(body) != "shop page" {
			t.Fatalf("an admitted visitor's request: %d %q", resp.StatusCode, body)
		}
		return jarCookie(t, v, gw, "anteroom_a_drop") != first
	})
	if renewed := jarCookie(t, v, gw, "anteroom_a_drop"); tokenSub(t, renewed) != user {
		t.Fatalf("the renewed admission names %q, want %q", tokenSub(t, renewed), user)
	}
	if users, _ := shop.seen(); users[len(users)-1] != user {
		t.Fatalf("the shop saw %q after the renewal, want %q", users[len(users)-1], user)
	}
}
