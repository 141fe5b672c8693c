package node_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/failopenmap"
	"github.com/anteroom/anteroom/internal/loopback"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// gateStub stands for anteroom's nodes behind nginx: its gate answers as
// mode says (a status, "reset": the connection closed without an answer,
// "hang": no answer until nginx gives up).
type gateStub struct{ mode atomic.Value }

func (g *gateStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch m, _ := g.mode.Load().(string); m {
	case "reset":
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	case "hang":
		<-r.Context().Done()
	case "204":
		w.Header().Set("X-Anteroom-User", "ada")
		w.WriteHeader(http.StatusNoContent)
	case "401":
		w.Header().Set("X-Anteroom-Redirect", "/e/drop")
		w.WriteHeader(http.StatusUnauthorized)
	case "500":
		w.WriteHeader(http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
	}
}

// startFailOpenGateway runs deploy/gateway/conf in a real nginx with the
// anteroom upstream at anteroom, the shop's at shop, and the fail-open map
// that `anteroom gateway fail-open` prints for until (zero: -off).
func startFailOpenGateway(t *testing.T, conf, anteroom, shop string, until time.Time) *testenv.Nginx {
	t.Helper()
	site, err := os.ReadFile("../../deploy/gateway/" + conf)
	if err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(t.TempDir(), "anteroom-fail-open.map")
	if err := os.WriteFile(m, []byte(failopenmap.Map(until, "test")), 0o600); err != nil {
		t.Fatal(err)
	}
	c := strings.Replace(string(site), "127.0.0.1:8080", anteroom, 1)
	c = strings.Replace(c, "127.0.0.1:3000", shop, 1)
	if !strings.Contains(c, failopenmap.Path) {
		t.Fatalf("%s does not include %s", conf, failopenmap.Path)
	}
	return testenv.StartNginx(t, strings.ReplaceAll(c, failopenmap.Path, m))
}

// TestNginxFailOpen runs both nginx examples in a real nginx with a
// gateway-side fail-open deadline a few seconds ahead, in front of a gate
// that fails every way it can (503, 500, a reset connection, a hang past
// the gate's timeout): each request reaches the shop with the deadline in
// X-Anteroom-Fail-Open and X-User-ID emptied (the client's own dropped);
// a gate that answers (401, 204) is obeyed as without a fail-open. At the
// deadline, with no reload and no one acting, a failing gate gets 503 and
// the shop is not reached. A node that is not listening at all (connection
// refused) is let through before a deadline, and refused with a deadline
// in the past or none.
func TestNginxFailOpen(t *testing.T) {
	for _, tc := range []struct{ conf, page string }{
		{"nginx.conf", "/drop/item?size=42"},
		{"nginx-safety-net.conf", "/products/42?color=red"},
	} {
		t.Run(tc.conf, func(t *testing.T) {
			t.Parallel()
			shop := &origin{}
			srv := httptest.NewServer(shop)
			t.Cleanup(srv.Close)
			stub := &gateStub{}
			ante := httptest.NewServer(stub)
			t.Cleanup(ante.Close)
			until := time.Now().Add(9 * time.Second).UTC().Truncate(time.Second)
			stamp := until.Format(time.RFC3339)
			gw := startFailOpenGateway(t, tc.conf, strings.TrimPrefix(ante.URL, "http://"), strings.TrimPrefix(srv.URL, "http://"), until)
			client := browserish(t)
			get := func() (*http.Response, string) {
				resp, body := getVia(t, client, gw.URL()+tc.page, map[string]string{"X-User-ID": "mallory"})
				return resp, string(body)
			}

			for _, mode := range []string{"503", "500", "reset", "hang"} {
				stub.mode.Store(mode)
				start := time.Now()
				resp, body := get()
				users, _ := shop.seen()
				if resp.StatusCode != http.StatusOK || body != "shop page" || resp.Header.Get("X-Anteroom-Fail-Open") != stamp {
					t.Fatalf("gate %s before the deadline: %d %q fail-open %q, want the shop with X-Anteroom-Fail-Open %s", mode, resp.StatusCode, body, resp.Header.Get("X-Anteroom-Fail-Open"), stamp)
				}
				if last := users[len(users)-1]; last != "" {
					t.Fatalf("gate %s: the shop saw X-User-ID %q, want none", mode, last)
				}
				t.Logf("gate %s: through in %s", mode, time.Since(start).Round(time.Millisecond))
			}
			stub.mode.Store("401")
			if resp, _ := get(); resp.StatusCode != http.StatusFound || !strings.HasSuffix(resp.Header.Get("Location"), "/e/drop") {
				t.Fatalf("gate 401 while a fail-open is set: %d %q, want the waiting room (a gate that answers is obeyed)", resp.StatusCode, resp.Header.Get("Location"))
			}
			stub.mode.Store("204")
			if resp, _ := get(); resp.StatusCode != http.StatusOK || resp.Header.Get("X-Anteroom-Fail-Open") != "" {
				t.Fatalf("gate 204: %d fail-open %q, want the shop without the header", resp.StatusCode, resp.Header.Get("X-Anteroom-Fail-Open"))
			}
			if users, _ := shop.seen(); users[len(users)-1] != "ada" {
				t.Fatalf("gate 204: the shop saw %q, want ada", users[len(users)-1])
			}

			stub.mode.Store("503")
			var closedAt time.Time
			nodetest.WaitFor(t, "nginx to fail closed at the deadline", time.Until(until)+2*time.Second, func() bool {
				if resp, _ := get(); resp.StatusCode == http.StatusServiceUnavailable {
					closedAt = time.Now()
					return true
				}
				return false
			})
			if closedAt.Before(until) {
				t.Errorf("failed closed at %s, before the deadline %s", closedAt.Format(time.RFC3339Nano), stamp)
			}
			before, _ := shop.seen()
			for range 3 {
				if resp, body := get(); resp.StatusCode != http.StatusServiceUnavailable || body == "shop page" {
					t.Fatalf("after the deadline: %d %q, want 503", resp.StatusCode, body)
				}
			}
			if after, _ := shop.seen(); len(after) != len(before) {
				t.Fatalf("after the deadline the shop got %d more requests", len(after)-len(before))
			}
			t.Logf("deadline %s: closed again at %s (%s after)", stamp, closedAt.Format(time.RFC3339Nano), closedAt.Sub(until).Round(time.Millisecond))

			// Nothing listening where the nodes are: connection refused.
			port, err := loopback.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			down := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			for _, c := range []struct {
				name  string
				until time.Time
				want  int
			}{
				{"deadline ahead", time.Now().Add(time.Hour), http.StatusOK},
				{"deadline past", time.Now().Add(-time.Minute), http.StatusServiceUnavailable},
				{"no deadline", time.Time{}, http.StatusServiceUnavailable},
			} {
				g := startFailOpenGateway(t, tc.conf, down, strings.TrimPrefix(srv.URL, "http://"), c.until)
				resp, body := getVia(t, client, g.URL()+tc.page, nil)
				if resp.StatusCode != c.want || (c.want == http.StatusOK) != (string(body) == "shop page") {
					t.Errorf("node down, %s: %d %q, want %d", c.name, resp.StatusCode, body, c.want)
				}
			}
		})
	}
}
