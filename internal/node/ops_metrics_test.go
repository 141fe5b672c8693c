package node_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// opsScrape fetches a node's /metrics from its metrics listener.
func opsScrape(t *testing.T, n *node.Node) string {
	t.Helper()
	resp, err := http.Get(n.MetricsURL() + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %d %s", resp.StatusCode, body)
	}
	return string(body)
}

// series returns the value of the first exposition line that starts with
// prefix (a name with labels in their exposition order), or "".
func opsSeries(text, prefix string) string {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix+" "); ok {
			return rest
		}
	}
	return ""
}

// TestOpsMetrics runs one admission and one claim through a node on
// redis-server and JetStream and reads them back from /metrics: pulled
// figures (the view, Redis totals) and pushed ones (tokens, publishes,
// Redis calls, HTTP requests by route template), all passing promlint.
func TestOpsMetrics(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "metered", openSale(10, 1, 0, 0, 1000))
	token := nodetest.AdmitUser(t, n, "metered", "alice")
	hdr := map[string]string{"X-User-ID": "alice", "Authorization": "Bearer " + token, "Idempotency-Key": "k1"}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/metered/claim", hdr, nil); a.Status != http.StatusCreated {
		t.Fatalf("claim: %d %s", a.Status, a.Raw)
	}
	var text string
	nodetest.WaitFor(t, "the view to count the grant", 10*time.Second, func() bool {
		text = opsScrape(t, n)
		return opsSeries(text, `anteroom_stock_remaining{event="metered"}`) == "9"
	})
	for prefix, want := range map[string]string{
		`anteroom_claims_granted_total{event="metered"}`:                                                     "1",
		`anteroom_claims_released_total{event="metered"}`:                                                    "0",
		`anteroom_queue_joined_total{event="metered"}`:                                                       "1",
		`anteroom_admitted_total{event="metered"}`:                                                           "1",
		`anteroom_queue_length{event="metered"}`:                                                             "0",
		`anteroom_admission_configured_rate{event="metered"}`:                                                "1000",
		`anteroom_sale_paused{event="metered"}`:                                                              "0",
		`anteroom_http_request_duration_seconds_count{method="POST",route="/events/:id/claim",status="201"}`: "1",
		`anteroom_http_request_duration_seconds_count{method="POST",route="/events/:id/join",status="200"}`:  "1",
		`anteroom_jetstream_publish_duration_seconds_count{result="ok"}`:                                     "1",
	} {
		if got := opsSeries(text, prefix); got != want {
			t.Errorf("%s = %q, want %q", prefix, got, want)
		}
	}
	// At least one token (alice may poll again before the claim).
	if got := opsSeries(text, `anteroom_admission_tokens_issued_total{event="metered"}`); got == "" || got == "0" {
		t.Errorf("tokens issued = %q, want at least 1", got)
	}
	if opsSeries(text, `anteroom_redis_call_duration_seconds_count{command="evalsha"}`) == "" {
		t.Error("no evalsha timed by the Redis hook")
	}
	if strings.Contains(text, `route="/events/metered`) {
		t.Error("a raw path became a route label")
	}
	problems, err := promlint.New(bytes.NewReader([]byte(text))).Lint()
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestOpsDrainFailsReadiness shows the lame duck: once draining, /readyz
// answers 503 while the node still answers everything else.
func TestOpsDrainFailsReadiness(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "lame", openSale(10, 1, 0, 0, 1000))
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/readyz", nil, nil); a.Status != http.StatusOK {
		t.Fatalf("ready before draining: %d %s", a.Status, a.Raw)
	}
	n.Drain()
	n.Drain() // idempotent
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/readyz", nil, nil)
	if a.Status != http.StatusServiceUnavailable || a.Header.Get("Retry-After") == "" || nodetest.Str(a.Body, "request_id") == "" {
		t.Errorf("ready while draining: %d %s, want 503 with Retry-After and a request id", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/events/lame", nil, nil); a.Status != http.StatusOK {
		t.Errorf("public event while draining: %d, want 200: still serving", a.Status)
	}
	if token := nodetest.AdmitUser(t, n, "lame", "bob"); token == "" {
		t.Error("no admission while draining")
	}
}

// TestOpsMetricsCountPassTokens: an admission token bought with a bypass
// pass is an admission token issued by this node, and
// anteroom_admission_tokens_issued_total counts it as it counts the
// queue's and the safety-net rooms'.
func TestOpsMetricsCountPassTokens(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "passed", openSale(5, 1, 30*time.Minute, 0, 1)) // the queue admits nobody
	op := map[string]string{"Authorization": "Bearer " + staffKey(t, n, "olga", "operator")}
	a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/passed/passes", op, []byte(`{"uses":1}`))
	if a.Status != http.StatusCreated {
		t.Fatalf("mint: %d %s", a.Status, a.Raw)
	}
	if a := join(t, n, "passed", map[string]string{"X-User-ID": "vip", tokens.PassHeader: nodetest.Str(a.Body, "pass")}); a.Status != http.StatusOK || nodetest.Str(a.Body, "admission_token") == "" {
		t.Fatalf("redeem: %d %s", a.Status, a.Raw)
	}
	if got := opsSeries(opsScrape(t, n), `anteroom_admission_tokens_issued_total{event="passed"}`); got != "1" {
		t.Errorf("tokens issued = %q, want 1 (the pass's)", got)
	}
}
