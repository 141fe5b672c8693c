package node_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

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
	// Without it, /metrics stays on the main address (the default).
	plain := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	if resp, _ := get(t, plain.URL()+"/metrics", "", nil); resp.StatusCode != http.StatusOK || plain.MetricsURL() != "" {
		t.Errorf("default: /metrics %d, metrics URL %q", resp.StatusCode, plain.MetricsURL())
	}
}
