package node_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
)

// startNode starts a node on a free loopback port and stops it on cleanup.
func startNode(t *testing.T, cfg node.Config) *node.Node {
	t.Helper()
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

// createSale creates an event through the admin API.
func createSale(t *testing.T, n *node.Node, id string, sale map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(sale)
	a := call(t, http.MethodPut, n.URL()+"/admin/events/"+id, map[string]string{"Authorization": "Bearer " + n.AdminToken}, raw)
	if a.status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", id, a.status, a.raw)
	}
}

// openSale returns a sale opening now, starting after startIn, with a
// shuffle window of window seconds.
func openSale(supply, limit int, startIn time.Duration, window int, rate float64) map[string]any {
	now := time.Now().UTC().Truncate(time.Second)
	return map[string]any{
		"name": "test sale", "supply": supply, "per_user_limit": limit,
		"prequeue_opens_at": now.Add(-time.Second), "starts_at": now.Add(startIn),
		"ends_at": now.Add(time.Hour), "random_window_seconds": window,
		"admit_rate_per_second": rate,
	}
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// registerLottery creates a lottery ev of supply units (limit 1, drawn two
// seconds from now, 100 admitted a second) and registers entrants users
// prefix0, prefix1, … by X-User-ID; it returns their tickets by user.
func registerLottery(t *testing.T, n *node.Node, ev string, supply, entrants int, prefix string) map[string]string {
	t.Helper()
	sale := openSale(supply, 1, 2*time.Second, 0, 100)
	sale["mode"] = "lottery"
	createSale(t, n, ev, sale)
	tickets := map[string]string{}
	for i := range entrants {
		u := fmt.Sprint(prefix, i)
		j := call(t, http.MethodPost, n.URL()+"/events/"+ev+"/join", map[string]string{"X-User-ID": u}, nil)
		if j.status != http.StatusOK {
			t.Fatalf("register: %d %s", j.status, j.raw)
		}
		tickets[u] = str(j.body, "ticket")
	}
	return tickets
}
