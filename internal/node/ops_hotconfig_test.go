package node_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// opsPropagation is how soon an admin change made on one node must show on
// every other node (each refreshes its view every 100 ms).
const opsPropagation = time.Second

// within polls cond until it holds or opsPropagation has passed since from.
func opsWithin(t *testing.T, from time.Time, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if time.Since(from) > opsPropagation {
			t.Fatalf("%s: not seen within %v of the change", what, opsPropagation)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%s: seen after %v", what, time.Since(from).Round(time.Millisecond))
}

// put sends an admin change to n and returns when it was answered.
func opsPut(t *testing.T, n *node.Node, id string, change map[string]any) time.Time {
	t.Helper()
	raw, _ := json.Marshal(change)
	a := call(t, http.MethodPut, n.URL()+"/admin/events/"+id, map[string]string{"Authorization": "Bearer " + n.AdminToken}, raw)
	if a.status != http.StatusOK {
		t.Fatalf("put %s %s: %d %s", id, raw, a.status, a.raw)
	}
	return time.Now()
}

// TestOpsHotConfigReachesEveryNode changes a sale through node A's admin
// API — the admission rate, pause, resume — and watches node B, which
// shares A's Redis, follow within a second: its public JSON, its metrics
// (its own view) and its answers.
func TestOpsHotConfigReachesEveryNode(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	a := startNode(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	b := startNode(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	createSale(t, a, "hot", openSale(100, 1, 0, 0, 1)) // one admission a second
	waitFor(t, "node B to see the sale", 5*time.Second, func() bool {
		return call(t, http.MethodGet, b.URL()+"/events/hot", nil, nil).status == http.StatusOK
	})

	// Everyone joins on B; at one a second the last would wait ~30 s.
	base := b.URL() + "/events/hot"
	var ticket string
	for i := range 30 {
		j := call(t, http.MethodPost, base+"/join", map[string]string{"X-User-ID": fmt.Sprintf("u%d", i)}, nil)
		if j.status != http.StatusOK {
			t.Fatalf("join: %d %s", j.status, j.raw)
		}
		ticket = str(j.body, "ticket")
	}
	status := func() answer {
		return call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
	}
	if s := status(); str(s.body, "state") != "waiting" {
		t.Fatalf("last joiner: %s, want waiting", s.raw)
	}

	// Rate: B's own view carries the new rate, and the queue moves.
	at := opsPut(t, a, "hot", map[string]any{"admit_rate_per_second": 5000})
	opsWithin(t, at, "rate on B's view", func() bool {
		return opsSeries(opsScrape(t, b), `anteroom_admission_configured_rate{event="hot"}`) == "5000"
	})
	var token string
	opsWithin(t, at, "last joiner admitted on B", func() bool {
		token = str(status().body, "admission_token")
		return token != ""
	})

	// Pause: B's public JSON shows it, and B refuses claims.
	at = opsPut(t, a, "hot", map[string]any{"paused": true})
	opsWithin(t, at, "pause on B's public JSON", func() bool {
		paused, _ := call(t, http.MethodGet, base, nil, nil).body["paused"].(bool)
		return paused
	})
	claimHdr := map[string]string{"X-User-ID": "u29", "Authorization": "Bearer " + token, "Idempotency-Key": "hot-1"}
	if c := call(t, http.MethodPost, base+"/claim", claimHdr, nil); c.status != http.StatusServiceUnavailable || str(c.body, "code") != "paused" {
		t.Errorf("claim on B while paused: %d %s, want 503 paused", c.status, c.raw)
	}
	if opsSeries(opsScrape(t, b), `anteroom_sale_paused{event="hot"}`) != "1" {
		t.Error("B's metrics do not show the pause")
	}

	// Resume: B takes claims again.
	at = opsPut(t, a, "hot", map[string]any{"paused": false})
	opsWithin(t, at, "resume on B", func() bool {
		return call(t, http.MethodPost, base+"/claim", claimHdr, nil).status == http.StatusCreated
	})
}
