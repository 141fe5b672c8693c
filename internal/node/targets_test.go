package node_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// lastHealth reads live.health.last, what staff see of the latest probe.
func lastHealth(t *testing.T, n *node.Node, ev string) string {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+ev, map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	var v struct {
		Live struct {
			Health *struct {
				Last string `json:"last"`
			} `json:"health"`
		} `json:"live"`
	}
	if err := json.Unmarshal(a.Raw, &v); err != nil || v.Live.Health == nil {
		t.Fatalf("admin view: %d %s", a.Status, a.Raw)
	}
	return v.Live.Health.Last
}

// TestPrivateTargetsRefused: on a node that allows no loopback and no
// metadata address (ANTEROOM_ALLOW_PRIVATE_TARGETS names another
// network), a shop health URL and a webhook on 127.0.0.1 and a health
// URL on the metadata address 169.254.169.254 are refused when dialled:
// the endpoint sees nothing, and staff see the class refused_target in
// live.health.last and the webhook's failure in the log, not the dial
// error (a TLS error from whatever answered at 169.254.169.254, before).
func TestPrivateTargetsRefused(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	var log lockedBuffer
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), WebhookAllowHTTP: true,
		AllowPrivateTargets: []string{"192.0.2.0/24"}, Log: slog.New(slog.NewTextHandler(&log, nil))}))
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	for ev, u := range map[string]string{"local": srv.URL + "/healthz", "metadata": "https://169.254.169.254/latest/meta-data/"} {
		sale := openSale(100, 1, 0, 0, 10)
		sale["shop"] = map[string]any{"secret": shopSecret, "health": map[string]any{
			"url": u, "interval_seconds": 1, "timeout_seconds": 1, "fail_after": 2, "recover_after": 2,
		}}
		sale["webhooks"] = []map[string]any{{"url": srv.URL + "/hook", "secret": "webhook-secret-0123456789"}}
		nodetest.CreateSale(t, n, ev, sale)
	}
	for _, ev := range []string{"local", "metadata"} {
		nodetest.WaitFor(t, ev+"'s probe", 15*time.Second, func() bool { return lastHealth(t, n, ev) != "" })
		if got := lastHealth(t, n, ev); got != "GET failed: refused_target" {
			t.Errorf("%s: live.health.last = %q, want GET failed: refused_target", ev, got)
		}
	}
	// The webhook's failed delivery is logged by class too.
	nodetest.WaitFor(t, "a refused webhook delivery in the log", 15*time.Second, func() bool {
		return strings.Contains(log.String(), "request failed: refused_target")
	})
	if strings.Contains(log.String(), "not a public address") {
		t.Errorf("the log holds the dial error's text:\n%s", log.String())
	}
	if h := hits.Load(); h != 0 {
		t.Errorf("the loopback endpoint saw %d requests (probes or webhooks), want 0", h)
	}
}
