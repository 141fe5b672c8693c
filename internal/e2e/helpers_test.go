package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// startNode starts a node on a free loopback port with its own
// redis-server and NATS JetStream, and stops it on cleanup. With no
// configure the node runs on the default identity (anonymous visitor
// cookies); nodetest.HeaderMode puts it behind a loopback gateway.
func startNode(t *testing.T, configure ...func(node.Config) node.Config) *node.Node {
	t.Helper()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	cfg := node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}
	for _, f := range configure {
		cfg = f(cfg)
	}
	return nodetest.Start(t, cfg)
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

// call sends one request and decodes a JSON answer.
func call(t *testing.T, method, url string, hdr map[string]string, body []byte) answer {
	t.Helper()
	a := nodetest.Call(t, method, url, hdr, body)
	return answer{status: a.Status, header: a.Header, body: a.Body, raw: a.Raw}
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// sale is an event configuration for the admin API, relative to now.
type sale struct {
	supply         int
	mode           string
	opensIn        time.Duration // prequeue_opens_at - now
	startsIn       time.Duration // starts_at - now
	window         int           // random_window_seconds
	rate           float64
	name           string
	pow            int // proof-of-work bits on join; 0: none
	endsAfterStart time.Duration
	lanes          []map[string]any // the event's lanes, as the admin API takes them
}

func (s sale) json(now time.Time) []byte {
	if s.mode == "" {
		s.mode = "fcfs"
	}
	if s.name == "" {
		s.name = "Launch sneaker drop"
	}
	if s.endsAfterStart == 0 {
		s.endsAfterStart = time.Hour
	}
	now = now.UTC().Truncate(time.Second)
	m := map[string]any{
		"name": s.name, "supply": s.supply, "mode": s.mode,
		"prequeue_opens_at": now.Add(s.opensIn), "starts_at": now.Add(s.startsIn), "ends_at": now.Add(s.startsIn + s.endsAfterStart),
		"random_window_seconds": s.window, "admit_rate_per_second": s.rate,
	}
	if s.pow > 0 {
		m["limits"] = map[string]any{"pow": map[string]any{"enabled": true, "bits": s.pow}}
	}
	if s.lanes != nil {
		m["lanes"] = s.lanes
	}
	raw, _ := json.Marshal(m)
	return raw
}

// createSale creates event id through the admin API.
func createSale(t *testing.T, n *node.Node, id string, s sale) {
	t.Helper()
	a := call(t, http.MethodPut, n.URL()+"/admin/events/"+id, map[string]string{"Authorization": "Bearer " + n.AdminToken}, s.json(time.Now()))
	if a.status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", id, a.status, a.raw)
	}
}

// admit joins ev over HTTP as a new anonymous visitor and polls until an
// admission token arrives. It returns the token and the visitor cookie
// header that names the visitor.
func admit(t *testing.T, n *node.Node, ev string) (token string, who map[string]string) {
	t.Helper()
	base := n.URL() + "/events/" + ev
	j := call(t, http.MethodPost, base+"/join", nil, nil)
	if j.status != http.StatusOK {
		t.Fatalf("join: %d %s", j.status, j.raw)
	}
	for _, c := range (&http.Response{Header: j.header}).Cookies() {
		if c.Name == "anteroom_visitor" {
			who = map[string]string{"Cookie": c.Name + "=" + c.Value}
		}
	}
	if who == nil {
		t.Fatalf("join set no visitor cookie: %v", j.header.Values("Set-Cookie"))
	}
	waitFor(t, "admission", 15*time.Second, func() bool {
		s := call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + str(j.body, "ticket")}, nil)
		token = str(s.body, "admission_token")
		return token != ""
	})
	return token, who
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
