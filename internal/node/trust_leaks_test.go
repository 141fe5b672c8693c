package node_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// get sends a GET with the given Host and headers.
func get(t *testing.T, url, host string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestDiscoveryIgnoresHost: OIDC discovery's jwks_uri comes from the
// configured issuer, never from Host or X-Forwarded-Host, even from a
// trusted proxy; without a URL issuer there is no discovery document.
func TestDiscoveryIgnoresHost(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	hostile := map[string]string{"X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"}
	const iss = "https://queue.shop.test"
	withURL := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Issuer: iss, TrustedProxies: []string{"127.0.0.1"}})
	resp, body := get(t, withURL.URL()+"/.well-known/openid-configuration", "evil.example", hostile)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"jwks_uri":"`+iss+`/.well-known/jwks.json"`) || strings.Contains(body, "evil") {
		t.Errorf("URL issuer, hostile Host: %d %s, want jwks_uri under %s", resp.StatusCode, body, iss)
	}
	bare := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TrustedProxies: []string{"127.0.0.1"}})
	resp, body = get(t, bare.URL()+"/.well-known/openid-configuration", "evil.example", hostile)
	if strings.Contains(body, "evil") || resp.StatusCode != http.StatusNotFound {
		t.Errorf("default issuer, hostile Host: %d %s, want 404 and no trace of the Host", resp.StatusCode, body)
	}
}

// TestRequestIDs: request ids are random (consecutive ids share almost no
// characters, unlike a counter over a fixed seed), a client's X-Request-ID
// is replaced unless the peer is a trusted proxy, and even then kept only
// when short and made of safe characters.
func TestRequestIDs(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	direct := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	idOf := func(n *node.Node, hdr map[string]string) string {
		resp, _ := get(t, n.URL()+"/events/none", "", hdr)
		return resp.Header.Get("X-Request-ID")
	}
	prev := idOf(direct, nil)
	seen := map[string]bool{prev: true}
	for range 20 {
		id := idOf(direct, nil)
		if len(id) < 16 || seen[id] {
			t.Fatalf("request id %q: want a fresh id of at least 16 characters", id)
		}
		same := 0
		for i := range min(len(id), len(prev)) {
			if id[i] == prev[i] {
				same++
			}
		}
		if same*2 >= len(id) {
			t.Fatalf("request ids %q then %q agree in %d of %d places: predictable", prev, id, same, len(id))
		}
		seen[id], prev = true, id
	}
	if got := idOf(direct, map[string]string{"X-Request-ID": "client-chosen-id"}); got == "client-chosen-id" || got == "" {
		t.Errorf("X-Request-ID from an untrusted peer: answered %q, want a fresh id", got)
	}

	proxied := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TrustedProxies: []string{"127.0.0.1"}})
	if got := idOf(proxied, map[string]string{"X-Request-ID": "lb-4711:abc_def.9"}); got != "lb-4711:abc_def.9" {
		t.Errorf("X-Request-ID from a trusted proxy: answered %q, want it kept", got)
	}
	for _, bad := range []string{"has space", "quote\"d", strings.Repeat("x", 65)} {
		if got := idOf(proxied, map[string]string{"X-Request-ID": bad}); got == bad || got == "" {
			t.Errorf("X-Request-ID %q from a trusted proxy: answered %q, want a fresh id", bad, got)
		}
	}
}

// TestMetricsOwnAddress: with ANTEROOM_METRICS_ADDR, /metrics is served
// on that listener only; the public address answers 404 there.
func TestMetricsOwnAddress(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), MetricsAddr: "127.0.0.1:0"})
	if n.MetricsURL() == "" || n.MetricsURL() == n.URL() {
		t.Fatalf("metrics URL %q beside %q: want a listener of its own", n.MetricsURL(), n.URL())
	}
	resp, body := get(t, n.MetricsURL()+"/metrics", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "anteroom_") {
		t.Errorf("metrics listener: %d %.200s", resp.StatusCode, body)
	}
	if resp, body := get(t, n.URL()+"/metrics", "", nil); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "anteroom_") {
		t.Errorf("public /metrics with a metrics address: %d %.200s, want 404", resp.StatusCode, body)
	}
	if resp, _ := get(t, n.MetricsURL()+"/events/x", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the metrics listener serves /events/x: %d, want 404", resp.StatusCode)
	}
	// Only MetricsPublic, asked for by name, serves them on the public
	// address too.
	public := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), MetricsPublic: true})
	if resp, body := get(t, public.URL()+"/metrics", "", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "anteroom_") {
		t.Errorf("MetricsPublic: public /metrics %d, want 200", resp.StatusCode)
	}
}

// TestMetricsNotPublicByDefault: with no metrics setting the public
// address answers 404 at /metrics (it used to serve them, naming every
// sale), the command's default listener is on loopback, and a sale whose
// pre-queue has not opened (not announced yet) is named by no public
// route that does not already carry its id: only the metrics listener
// names it.
func TestMetricsNotPublicByDefault(t *testing.T) {
	if def := node.DefaultConfig(); def.MetricsAddr != node.DefaultMetricsAddr || !strings.HasPrefix(def.MetricsAddr, "127.0.0.1:") || def.MetricsPublic {
		t.Fatalf("default metrics %q public %v: want loopback only", def.MetricsAddr, def.MetricsPublic)
	}
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	const secret = "unannounced-summer-drop-7f3a"
	nodetest.CreateSale(t, n, secret, map[string]any{"supply": 10, "prequeue_opens_at": time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339),
		"starts_at": time.Now().Add(49 * time.Hour).UTC().Format(time.RFC3339)})
	// A request to the sale, so that every per-sale series exists.
	get(t, n.URL()+"/events/"+secret+"/status", "", nil)
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/.well-known/jwks.json", "/.well-known/openid-configuration",
		"/openapi.yaml", "/admin/", "/admin/report", "/assets/anteroom.js", "/assets/room.js", "/events/", "/events", "/e/", "/e/other"} {
		resp, body := get(t, n.URL()+path, "", nil)
		if path == "/metrics" && resp.StatusCode != http.StatusNotFound {
			t.Errorf("public /metrics: %d, want 404", resp.StatusCode)
		}
		for k, v := range resp.Header {
			if strings.Contains(strings.Join(v, " "), secret) {
				t.Errorf("public %s: header %s names the unannounced sale", path, k)
			}
		}
		if strings.Contains(body, secret) {
			t.Errorf("public %s (%d) names the unannounced sale", path, resp.StatusCode)
		}
	}
	resp, body := get(t, n.MetricsURL()+"/metrics", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, secret) {
		t.Fatalf("metrics listener: %d, names the sale %v; want 200 naming it (else this test checks nothing)", resp.StatusCode, strings.Contains(body, secret))
	}
}
