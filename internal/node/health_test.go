package node_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/web/shopper"
)

// stubHealth is a shop's health endpoint whose answer the test sets.
type stubHealth struct {
	status atomic.Int32
	probes atomic.Int64
}

func (h *stubHealth) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.probes.Add(1)
	w.WriteHeader(int(h.status.Load()))
}

// healthOf reads the sale's health hold and pause from the admin view.
func healthOf(t *testing.T, n *node.Node, ev string) (held, paused bool, frontier float64) {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+ev, map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	var v struct {
		Config struct {
			Paused bool `json:"paused"`
		} `json:"config"`
		Live struct {
			Frontier float64 `json:"frontier"`
			Health   *struct {
				Held bool `json:"held"`
			} `json:"health"`
		} `json:"live"`
	}
	if err := json.Unmarshal(a.Raw, &v); err != nil || v.Live.Health == nil {
		t.Fatalf("admin view: %d %s", a.Status, a.Raw)
	}
	return v.Live.Health.Held, v.Config.Paused, v.Live.Frontier
}

// lifecycleOf returns the sale's recent lifecycle events as
// "type/reason", newest first.
func lifecycleOf(t *testing.T, n *node.Node, ev string) []string {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+ev+"/lifecycle", map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	var v struct {
		Events []struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(a.Raw, &v); err != nil {
		t.Fatalf("lifecycle: %d %s", a.Status, a.Raw)
	}
	var out []string
	for _, e := range v.Events {
		reason, _ := e.Data["reason"].(string)
		if e.Type == "paused" || e.Type == "resumed" {
			out = append(out, e.Type+"/"+reason)
		}
	}
	return out
}

func count(xs []string, x string) int {
	k := 0
	for _, y := range xs {
		if y == x {
			k++
		}
	}
	return k
}

// TestShopHealthPausesAndResumes polls a real stub health endpoint: when it
// fails fail_after times in a row admission is held (the frontier stands
// still, a waiting shopper sees "paused", a paused/health lifecycle event
// is recorded) and when it recovers admission resumes. A staff pause
// outlives a health recovery.
func TestShopHealthPausesAndResumes(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), WebhookAllowHTTP: true}))
	stub := &stubHealth{}
	stub.status.Store(http.StatusOK)
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	sale := openSale(1000, 1, 0, 0, 2) // two a second: people stay waiting
	sale["shop"] = map[string]any{"secret": shopSecret, "health": map[string]any{
		"url": srv.URL + "/healthz", "interval_seconds": 1, "timeout_seconds": 1, "fail_after": 2, "recover_after": 2, "max_error_rate": 0.2,
	}}
	nodetest.CreateSale(t, n, "healthy", sale)
	var last string
	for _, u := range []string{"h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8", "h9", "h10", "h11", "h12", "h13", "h14", "h15", "h16", "h17", "h18", "h19", "h20"} {
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/healthy/join", map[string]string{"X-User-ID": u}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join: %d %s", j.Status, j.Raw)
		}
		last = nodetest.Str(j.Body, "ticket")
	}
	stateOfLast := func() string {
		s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/healthy/status", map[string]string{"Authorization": "Bearer " + last}, nil)
		return nodetest.Str(s.Body, "state")
	}
	nodetest.WaitFor(t, "a probe", 10*time.Second, func() bool { return stub.probes.Load() > 0 })

	stub.status.Store(http.StatusServiceUnavailable)
	nodetest.WaitFor(t, "the failing shop to hold admission", 20*time.Second, func() bool { held, _, _ := healthOf(t, n, "healthy"); return held })
	nodetest.WaitFor(t, "a waiting shopper to see paused", 5*time.Second, func() bool { return stateOfLast() == "paused" })
	_, _, f0 := healthOf(t, n, "healthy")
	throughTicks(t, n, "healthy", time.Second, func() {
		if _, _, f := healthOf(t, n, "healthy"); f != f0 {
			t.Fatalf("frontier moved %.2f -> %.2f while the shop's health held admission", f0, f)
		}
	})
	nodetest.WaitFor(t, "paused/health in the lifecycle", 10*time.Second, func() bool { return count(lifecycleOf(t, n, "healthy"), "paused/health") == 1 })

	stub.status.Store(http.StatusOK)
	nodetest.WaitFor(t, "the recovered shop to release admission", 20*time.Second, func() bool { held, _, _ := healthOf(t, n, "healthy"); return !held })
	nodetest.WaitFor(t, "the frontier to move again", 10*time.Second, func() bool { _, _, f := healthOf(t, n, "healthy"); return f > f0 })
	nodetest.WaitFor(t, "resumed/health in the lifecycle", 10*time.Second, func() bool { return count(lifecycleOf(t, n, "healthy"), "resumed/health") == 1 })

	// A staff pause is not undone by a health recovery.
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	if p := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/healthy/pause", admin, nil); p.Status != http.StatusOK {
		t.Fatalf("pause: %d %s", p.Status, p.Raw)
	}
	stub.status.Store(http.StatusInternalServerError)
	nodetest.WaitFor(t, "the second hold", 20*time.Second, func() bool { held, _, _ := healthOf(t, n, "healthy"); return held })
	stub.status.Store(http.StatusNoContent)
	nodetest.WaitFor(t, "the second recovery", 20*time.Second, func() bool {
		return count(lifecycleOf(t, n, "healthy"), "resumed/health") == 2
	})
	_, paused, f1 := healthOf(t, n, "healthy")
	if !paused {
		t.Fatal("a health recovery resumed a staff pause")
	}
	throughTicks(t, n, "healthy", time.Second, func() {
		if _, _, f := healthOf(t, n, "healthy"); f != f1 {
			t.Fatalf("frontier moved %.2f -> %.2f while staff paused", f1, f)
		}
		if st := stateOfLast(); st != "paused" {
			t.Fatalf("waiting shopper sees %q while staff paused", st)
		}
	})
	if got := lifecycleOf(t, n, "healthy"); count(got, "paused/staff") != 1 || count(got, "resumed/staff") != 0 {
		t.Fatalf("lifecycle %v: want one staff pause and no staff resume", got)
	}

}

func pushHealth(t *testing.T, n *node.Node, body string) nodetest.Answer {
	t.Helper()
	return shopCall(t, n, shopSecret, "/events/pushed/health", []byte(body))
}

// TestShopHealthPush holds admission after two pushed error rates above
// max_error_rate and releases it after one below; malformed, unsigned or
// out-of-range pushes answer problem+json and count for nothing. A health
// URL over http is refused unless the node allows http by name.
func TestShopHealthPush(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	sale := openSale(1000, 1, 0, 0, 2)
	sale["shop"] = map[string]any{"secret": shopSecret, "health": map[string]any{"fail_after": 2, "recover_after": 1, "max_error_rate": 0.2}}
	nodetest.CreateSale(t, n, "pushed", sale)
	plain := openSale(10, 1, 0, 0, 2)
	plain["shop"] = map[string]any{"health": map[string]any{"url": "http://127.0.0.1:1/healthz"}}
	raw, _ := json.Marshal(plain)
	a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/plain", map[string]string{"Authorization": "Bearer " + n.AdminToken}, raw)
	wantProblem(t, "http health URL", a, http.StatusBadRequest, "bad_request")
	wantProblem(t, "push to a refused sale", shopCall(t, n, shopSecret, "/events/plain/health", []byte(`{"healthy": false}`)), http.StatusNotFound, "unknown_event")
	nodetest.CreateSale(t, n, "nosecret", openSale(10, 1, 0, 0, 2))
	wantProblem(t, "push to a sale without shop.secret", shopCall(t, n, shopSecret, "/events/nosecret/health", []byte(`{"healthy": false}`)), http.StatusForbidden, "forbidden")

	push := func(body string, held bool) {
		t.Helper()
		p := pushHealth(t, n, body)
		if p.Status != http.StatusOK || p.Body["held"] != held {
			t.Fatalf("push %s: %d %s, want held %v", body, p.Status, p.Raw, held)
		}
	}
	push(`{"error_rate": 0.9}`, false)
	for _, bad := range []string{`{"error_rate": 0.5, "healthy": true}`, `{"error_rate": 1.5}`, `{}`, `{"error_rate": "high"}`, `[`, `{"error_rate": 0.9, "x": 1}`} {
		wantProblem(t, "push "+bad, pushHealth(t, n, bad), http.StatusBadRequest, "bad_request")
	}
	wantProblem(t, "unsigned push", shopCall(t, n, "", "/events/pushed/health", []byte(`{"healthy": false}`)), http.StatusUnauthorized, "unauthenticated")
	wantProblem(t, "push with a stale signature", nodetest.Call(t, http.MethodPost, n.URL()+"/events/pushed/health", map[string]string{
		shopper.ShopSignatureHeader: shopper.SignShopCall(shopSecret, time.Now().Add(-time.Hour), "/events/pushed/health", []byte(`{"healthy": false}`)),
	}, []byte(`{"healthy": false}`)), http.StatusUnauthorized, "unauthenticated")
	if held, _, _ := healthOf(t, n, "pushed"); held {
		t.Fatal("refused pushes counted toward the hold")
	}
	push(`{"healthy": false}`, true) // the second failing reading in a row
	nodetest.WaitFor(t, "paused/health in the lifecycle", 10*time.Second, func() bool { return count(lifecycleOf(t, n, "pushed"), "paused/health") == 1 })
	push(`{"error_rate": 0.2}`, false)
	nodetest.WaitFor(t, "resumed/health in the lifecycle", 10*time.Second, func() bool { return count(lifecycleOf(t, n, "pushed"), "resumed/health") == 1 })

	// Staff remove the check while it holds: the hold ends (a resumed
	// event), and a check added again starts from no failures.
	push(`{"healthy": false}`, false)
	push(`{"healthy": false}`, true)
	nodetest.WaitFor(t, "the second paused/health", 10*time.Second, func() bool { return count(lifecycleOf(t, n, "pushed"), "paused/health") == 2 })
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	for _, body := range []string{`{"shop": {"health": null}}`, `{"shop": {"health": {"fail_after": 2, "recover_after": 1}}}`} {
		if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/pushed", admin, []byte(body)); a.Status != http.StatusOK {
			t.Fatalf("PUT %s: %d %s", body, a.Status, a.Raw)
		}
	}
	nodetest.WaitFor(t, "the removed check's resumed/health", 10*time.Second, func() bool { return count(lifecycleOf(t, n, "pushed"), "resumed/health") == 2 })
	if held, _, _ := healthOf(t, n, "pushed"); held {
		t.Fatal("a check added again starts held")
	}
	push(`{"healthy": false}`, false) // one failure of the two it takes
}
