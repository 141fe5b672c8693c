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
	a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/"+id, map[string]string{"Authorization": "Bearer " + n.AdminToken}, raw)
	if a.Status != http.StatusOK {
		t.Fatalf("put %s %s: %d %s", id, raw, a.Status, a.Raw)
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
	a := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	b := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, a, "hot", openSale(100, 1, 0, 0, 1)) // one admission a second
	nodetest.WaitFor(t, "node B to see the sale", 5*time.Second, func() bool {
		return nodetest.Call(t, http.MethodGet, b.URL()+"/events/hot", nil, nil).Status == http.StatusOK
	})

	// Everyone joins on B; at one a second the last would wait ~30 s.
	base := b.URL() + "/events/hot"
	var ticket string
	for i := range 30 {
		j := nodetest.Call(t, http.MethodPost, base+"/join", map[string]string{"X-User-ID": fmt.Sprintf("u%d", i)}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join: %d %s", j.Status, j.Raw)
		}
		ticket = nodetest.Str(j.Body, "ticket")
	}
	status := func() nodetest.Answer {
		return nodetest.Call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
	}
	if s := status(); nodetest.Str(s.Body, "state") != "waiting" {
		t.Fatalf("last joiner: %s, want waiting", s.Raw)
	}

	// Rate: B's own view carries the new rate, and the queue moves.
	at := opsPut(t, a, "hot", map[string]any{"admit_rate_per_second": 5000})
	opsWithin(t, at, "rate on B's view", func() bool {
		return opsSeries(opsScrape(t, b), `anteroom_admission_configured_rate{event="hot"}`) == "5000"
	})
	var token string
	opsWithin(t, at, "last joiner admitted on B", func() bool {
		token = nodetest.Str(status().Body, "admission_token")
		return token != ""
	})

	// Pause: B's public JSON shows it, and B refuses claims.
	at = opsPut(t, a, "hot", map[string]any{"paused": true})
	opsWithin(t, at, "pause on B's public JSON", func() bool {
		paused, _ := nodetest.Call(t, http.MethodGet, base, nil, nil).Body["paused"].(bool)
		return paused
	})
	claimHdr := map[string]string{"X-User-ID": "u29", "Authorization": "Bearer " + token, "Idempotency-Key": "hot-1"}
	if c := nodetest.Call(t, http.MethodPost, base+"/claim", claimHdr, nil); c.Status != http.StatusServiceUnavailable || nodetest.Str(c.Body, "code") != "paused" {
		t.Errorf("claim on B while paused: %d %s, want 503 paused", c.Status, c.Raw)
	}
	if opsSeries(opsScrape(t, b), `anteroom_sale_paused{event="hot"}`) != "1" {
		t.Error("B's metrics do not show the pause")
	}

	// Resume: B takes claims again.
	at = opsPut(t, a, "hot", map[string]any{"paused": false})
	opsWithin(t, at, "resume on B", func() bool {
		return nodetest.Call(t, http.MethodPost, base+"/claim", claimHdr, nil).Status == http.StatusCreated
	})
}
