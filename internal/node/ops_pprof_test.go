package node_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestPprofOffByDefault: a node started without PprofAddr has no profile
// listener, and its public address answers 404 at /debug/pprof/.
func TestPprofOffByDefault(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	if n.PprofURL() != "" {
		t.Errorf("pprof URL %q without PprofAddr, want none", n.PprofURL())
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/cmdline"} {
		if resp, body := get(t, n.URL()+p, "", nil); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "goroutine") {
			t.Errorf("public %s: %d %.100s, want 404", p, resp.StatusCode, body)
		}
	}
}

// TestPprofOwnAddress: with PprofAddr (ANTEROOM_PPROF_ADDR) the profiles
// are served on that listener only, and nothing else is.
func TestPprofOwnAddress(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), PprofAddr: "127.0.0.1:0"})
	if n.PprofURL() == "" || n.PprofURL() == n.URL() {
		t.Fatalf("pprof URL %q beside %q: want a listener of its own", n.PprofURL(), n.URL())
	}
	if resp, body := get(t, n.PprofURL()+"/debug/pprof/", "", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index: %d %.200s", resp.StatusCode, body)
	}
	if resp, body := get(t, n.PprofURL()+"/debug/pprof/allocs?debug=1", "", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("allocs profile: %d %.200s", resp.StatusCode, body)
	}
	if resp, _ := get(t, n.URL()+"/debug/pprof/", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("public /debug/pprof/ with a pprof address: %d, want 404", resp.StatusCode)
	}
	for _, p := range []string{"/metrics", "/events/x/status", "/healthz"} {
		if resp, _ := get(t, n.PprofURL()+p, "", nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("the pprof listener serves %s: %d, want 404", p, resp.StatusCode)
		}
	}
}
