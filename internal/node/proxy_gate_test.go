package node_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/shopper"
)

// TestCaddyGate runs deploy/gateway/Caddyfile as written (its upstream
// and site addresses replaced) in a real caddy: see checkProxyGate.
func TestCaddyGate(t *testing.T) {
	checkProxyGate(t, "Caddyfile", func(t *testing.T, conf string) string {
		return testenv.StartCaddy(t, conf).URL()
	})
}

// TestHAProxyGate runs deploy/gateway/haproxy.cfg and anteroom-gate.lua
// as written (the upstream, bind and Lua addresses replaced) in a real
// haproxy: see checkProxyGate.
func TestHAProxyGate(t *testing.T) {
	lua, err := filepath.Abs("../../deploy/gateway/anteroom-gate.lua")
	if err != nil {
		t.Fatal(err)
	}
	checkProxyGate(t, "haproxy.cfg", func(t *testing.T, conf string) string {
		if !strings.Contains(conf, "/etc/haproxy/anteroom-gate.lua") {
			t.Fatal("haproxy.cfg loads no /etc/haproxy/anteroom-gate.lua")
		}
		return testenv.StartHAProxy(t, strings.ReplaceAll(conf, "/etc/haproxy/anteroom-gate.lua", lua)).URL()
	})
}

// checkProxyGate runs the gateway configuration deploy/gateway/<file>,
// started by start, in front of a stub shop and a node in header identity
// mode (which believes X-User-ID from loopback, where the proxy is: the
// strongest test of the proxy's stripping), whose sale "drop" has a door.
// Through the proxy:
//   - a visitor without an admission, naming itself with X-User-ID (also a
//     user the door's bypass rule lets through), is redirected to the
//     waiting page with its path as the return, and the shop sees nothing;
//   - the waiting page and the JWKS are served on the proxy's host;
//   - a forged, expired or other event's token is redirected likewise;
//   - an admitted visitor (bearer or cookie, GET or POST) reaches the shop
//     as the token's subject, never as the X-User-ID it sent;
//   - a bypassed path reaches the shop naming nobody, a page outside the
//     protected URLs likewise, and a DELETE the door blocks is 403;
//   - the return address stays a path on the site: a client's own
//     X-Original-URI, an absolute-form request target naming another host
//     and a path shaped like "//host" never make the redirect leave it;
//   - with the node stopped, a valid token reaches nothing (fail closed).
func checkProxyGate(t *testing.T, file string, start func(t *testing.T, conf string) string) {
	site, err := os.ReadFile(filepath.Join("../../deploy/gateway", file))
	if err != nil {
		t.Fatal(err)
	}
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir, Manual: true}))
	sale := openSale(10, 1, 0, 0, 1000)
	sale["door"] = map[string]any{"rules": []map[string]string{
		{"name": "health", "when": `request.path == "/drop/health"`, "then": "bypass"},
		{"name": "partner", "when": `user == "partner"`, "then": "bypass"},
		{"name": "no-delete", "when": `request.method == "DELETE"`, "then": "block"},
	}}
	nodetest.CreateSale(t, n, "drop", sale)
	nodetest.CreateSale(t, n, "other", openSale(10, 1, 0, 0, 1000))
	shop := &origin{}
	var (
		mu     sync.Mutex
		bodies []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		shop.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	for _, a := range []string{"127.0.0.1:8080", "127.0.0.1:3000"} {
		if !strings.Contains(string(site), a) {
			t.Fatalf("%s names no %s to replace", file, a)
		}
	}
	conf := strings.ReplaceAll(string(site), "127.0.0.1:8080", strings.TrimPrefix(n.URL(), "http://"))
	conf = strings.ReplaceAll(conf, "127.0.0.1:3000", strings.TrimPrefix(srv.URL, "http://"))
	gw := start(t, conf)

	keys, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ev, user string, at time.Time) string {
		raw, _, err := tokens.NewIssuer(keys, tokens.IssuerConfig{}).Issue(ev, user, 1, 5*time.Minute, at)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	alice := issue("drop", "alice", time.Now())
	seen := func() int { users, _ := shop.seen(); return len(users) }
	last := func() (string, string) { users, paths := shop.seen(); return users[len(users)-1], paths[len(paths)-1] }

	const item = "/drop/item?a=1&b=2"
	wantPage := "/e/drop?return=" + url.QueryEscape(item)
	// waiting asserts that hdr's request for path is sent to the waiting
	// page returning to ret, and that the shop sees nothing.
	waiting := func(name, path, ret string, hdr map[string]string) {
		t.Helper()
		before := seen()
		resp, body := getVia(t, browserish(t), gw+path, hdr)
		want := "/e/drop?return=" + url.QueryEscape(ret)
		if resp.StatusCode != http.StatusFound || !sameSitePath(gw, resp.Header.Get("Location"), want) {
			t.Errorf("%s: %d to %q (%s), want 302 to %s", name, resp.StatusCode, resp.Header.Get("Location"), body, want)
		}
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
			t.Errorf("%s: redirect Cache-Control %q, want no-store", name, cc)
		}
		if seen() != before {
			t.Errorf("%s: the shop saw %d requests, want none", name, seen()-before)
		}
	}
	waiting("anonymous, naming itself", item, item, map[string]string{"X-User-ID": "mallory"})
	waiting("naming the user a bypass rule lets through", item, item, map[string]string{"X-User-ID": "partner"})
	waiting("forged X-Original-*", item, item, map[string]string{"X-Original-URI": "//evil.example/", "X-Original-Method": "GET", "X-Anteroom-User": "mallory"})
	waiting("a path shaped like another host", "/drop//evil.example/x", "/drop//evil.example/x", nil)
	sig := alice[strings.LastIndexByte(alice, '.')+1:]
	for name, bad := range map[string]string{
		"forged token":      alice[:len(alice)-len(sig)] + strings.Repeat("A", len(sig)),
		"expired token":     issue("drop", "alice", time.Now().Add(-time.Hour)),
		"other event token": issue("other", "alice", time.Now()),
	} {
		waiting(name, item, item, map[string]string{"Cookie": shopper.AdmissionCookie("drop") + "=" + bad, "X-User-ID": "alice"})
	}
	if loc := rawGet(t, gw, "http://evil.example/drop/x?y=1", "evil.example"); loc != "/e/drop?return="+url.QueryEscape("/drop/x?y=1") &&
		!sameSitePath(gw, loc, "/e/drop?return="+url.QueryEscape("/drop/x?y=1")) {
		t.Errorf("absolute-form request for another host: redirected to %q, want the waiting page on this site", loc)
	}

	for _, p := range []string{wantPage, "/.well-known/jwks.json"} {
		if resp, body := getVia(t, browserish(t), gw+p, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s through the proxy: %d %s", p, resp.StatusCode, body)
		}
	}

	admitted := func(name string, req *http.Request, want string) {
		t.Helper()
		req.Header.Set("X-User-ID", "mallory")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "shop page" {
			t.Errorf("%s: %d %q, want the shop page", name, resp.StatusCode, body)
			return
		}
		if user, path := last(); user != want || path != req.URL.RequestURI() {
			t.Errorf("%s: the shop saw %s as %q, want %s as %q", name, path, user, req.URL.RequestURI(), want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, gw+item, nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	admitted("admitted by bearer, naming itself mallory", req, "alice")
	req, _ = http.NewRequest(http.MethodGet, gw+item, nil)
	req.AddCookie(&http.Cookie{Name: shopper.AdmissionCookie("drop"), Value: alice})
	admitted("admitted by cookie, naming itself mallory", req, "alice")
	req, _ = http.NewRequest(http.MethodPost, gw+"/drop/cart", strings.NewReader("sku=42"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+alice)
	admitted("admitted form post", req, "alice")
	mu.Lock()
	got := bodies[len(bodies)-1]
	mu.Unlock()
	if got != "sku=42" {
		t.Errorf("admitted form post: the shop got the body %q, want sku=42", got)
	}
	req, _ = http.NewRequest(http.MethodGet, gw+"/drop/health", nil)
	admitted("a bypassed path, anonymous", req, "")
	req, _ = http.NewRequest(http.MethodGet, gw+"/about", nil)
	admitted("a page outside the protected URLs", req, "")

	before := seen()
	req, _ = http.NewRequest(http.MethodDelete, gw+"/drop/item", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusForbidden || seen() != before {
		t.Errorf("DELETE the door blocks: %d (the shop saw %d), want 403 and nothing", resp.StatusCode, seen()-before)
	}

	// The node stopped: a valid token reaches nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	before = seen()
	start0 := time.Now()
	resp, body := getVia(t, browserish(t), gw+item, map[string]string{"Authorization": "Bearer " + alice})
	if resp.StatusCode < 500 || seen() != before {
		t.Errorf("node stopped: %d %q (the shop saw %d), want a 5xx and nothing", resp.StatusCode, body, seen()-before)
	}
	t.Logf("node stopped: answered in %s", time.Since(start0))
	if d := time.Since(start0); d > 6*time.Second {
		t.Errorf("node stopped: the answer took %s", d)
	}
}

// sameSitePath reports whether loc, a Location answered by the proxy at
// base, is want (a path and query) on base's own host: relative, or
// absolute with base's scheme and host.
func sameSitePath(base, loc, want string) bool {
	b, err := url.Parse(base)
	if err != nil {
		return false
	}
	l, err := b.Parse(loc)
	return err == nil && l.Scheme == b.Scheme && l.Host == b.Host && l.RequestURI() == want
}

// rawGet sends a GET with the absolute-form request target target and
// Host host to the proxy at base over one connection, and returns the
// answer's Location.
func rawGet(t *testing.T, base, target, host string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("GET %s: %d, want 302", target, resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

// TestProxyGatesHangingGate runs the Caddy and HAProxy files against a
// gate that accepts connections and never answers: each must answer the
// visitor a 5xx within its bound (5 s: Caddy's response_header_timeout,
// the HAProxy script's four attempts of 1.25 s) and pass nothing to the
// shop.
func TestProxyGatesHangingGate(t *testing.T) {
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hang.Close() })
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := hang.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	shop := &origin{}
	srv := httptest.NewServer(shop)
	t.Cleanup(srv.Close)
	lua, err := filepath.Abs("../../deploy/gateway/anteroom-gate.lua")
	if err != nil {
		t.Fatal(err)
	}
	for file, start := range map[string]func(*testing.T, string) string{
		"Caddyfile": func(t *testing.T, conf string) string { return testenv.StartCaddy(t, conf).URL() },
		"haproxy.cfg": func(t *testing.T, conf string) string {
			return testenv.StartHAProxy(t, strings.ReplaceAll(conf, "/etc/haproxy/anteroom-gate.lua", lua)).URL()
		},
	} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			site, err := os.ReadFile(filepath.Join("../../deploy/gateway", file))
			if err != nil {
				t.Fatal(err)
			}
			conf := strings.ReplaceAll(string(site), "127.0.0.1:8080", hang.Addr().String())
			gw := start(t, strings.ReplaceAll(conf, "127.0.0.1:3000", strings.TrimPrefix(srv.URL, "http://")))
			began := time.Now()
			resp, _ := getVia(t, &http.Client{Timeout: 30 * time.Second}, gw+"/drop/item", map[string]string{"Authorization": "Bearer x.y.z"})
			took := time.Since(began)
			t.Logf("a hanging gate: %d after %s", resp.StatusCode, took)
			if resp.StatusCode < 500 || took > 7*time.Second {
				t.Errorf("a hanging gate: %d after %s, want a 5xx within 7 s", resp.StatusCode, took)
			}
		})
	}
	t.Cleanup(func() {
		if users, _ := shop.seen(); len(users) != 0 {
			t.Errorf("the shop saw %d requests, want none", len(users))
		}
	})
}
