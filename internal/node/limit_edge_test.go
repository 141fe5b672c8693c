package node_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestEarlyBirdCostsNoRedis: before the pre-queue opens, join, status and
// claim are refused 403 not_open with Retry-After, and INFO commandstats
// shows that none of them (nor the public event or its challenge) ran a
// Redis command.
func TestEarlyBirdCostsNoRedis(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Manual: true}))
	later := openSale(5, 1, time.Hour, 0, 10)
	later["prequeue_opens_at"] = time.Now().Add(30 * time.Minute).UTC().Truncate(time.Second)
	later["ends_at"] = time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	later["limits"] = map[string]any{"pow": map[string]any{"enabled": true}}
	nodetest.CreateSale(t, n, "later", later)
	base := n.URL() + "/events/later"
	nodetest.Call(t, http.MethodGet, base, nil, nil) // warm the client's connection

	before := r.CommandCount(t)
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/join"}, {http.MethodGet, "/status"}, {http.MethodPost, "/claim"},
	} {
		for _, hdr := range []map[string]string{
			{"X-User-ID": "early"},
			{"X-User-ID": "early", "Authorization": "Bearer x.y.z", "X-Device-ID": "d1"},
		} {
			a := nodetest.Call(t, tc.method, base+tc.path, hdr, nil)
			ra, _ := strconv.Atoi(a.Header.Get("Retry-After"))
			if a.Status != http.StatusForbidden || nodetest.Str(a.Body, "code") != "not_open" || ra < 29*60 {
				t.Fatalf("%s %s: %d %s Retry-After %q, want 403 not_open with Retry-After about 30 min", tc.method, tc.path, a.Status, a.Raw, a.Header.Get("Retry-After"))
			}
		}
	}
	if a := nodetest.Call(t, http.MethodGet, base+"/challenge", map[string]string{"X-User-ID": "early"}, nil); a.Status != http.StatusOK {
		t.Fatalf("challenge: %d %s", a.Status, a.Raw)
	}
	if after := r.CommandCount(t); after != before {
		t.Fatalf("early-bird requests ran %d Redis commands, want 0: %v", after-before, r.CommandStats(t))
	}
}

// TestStatusLimitsAreNodeLocal spends the per-ticket and per-IP status
// budgets: 429 rate_limited with Retry-After, other tickets unaffected,
// and not one Redis command for any of it.
func TestStatusLimitsAreNodeLocal(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Manual: true}))
	nodetest.CreateSale(t, n, "per-ticket", limited(map[string]any{"status": map[string]any{"ticket": rate(3)}}))
	nodetest.CreateSale(t, n, "per-ip", limited(map[string]any{"status": map[string]any{"ip": rate(2), "ticket": map[string]any{"per_second": -1}}}))
	ticket := func(ev, user string) string {
		a := join(t, n, ev, map[string]string{"X-User-ID": user})
		if a.Status != http.StatusOK {
			t.Fatalf("join: %d %s", a.Status, a.Raw)
		}
		return nodetest.Str(a.Body, "ticket")
	}
	t1, t2 := ticket("per-ticket", "a"), ticket("per-ticket", "b")
	var ipTickets []string
	for i := range 3 {
		ipTickets = append(ipTickets, ticket("per-ip", fmt.Sprint("u", i)))
	}
	poll := func(ev, tk string) nodetest.Answer {
		return nodetest.Call(t, http.MethodGet, n.URL()+"/events/"+ev+"/status", map[string]string{"Authorization": "Bearer " + tk}, nil)
	}
	before := r.CommandCount(t)
	for i := range 3 {
		if a := poll("per-ticket", t1); a.Status != http.StatusOK {
			t.Fatalf("poll %d: %d %s", i, a.Status, a.Raw)
		}
	}
	wantRateLimited(t, poll("per-ticket", t1), "status polls with this ticket")
	if a := poll("per-ticket", t2); a.Status != http.StatusOK {
		t.Fatalf("another ticket: %d %s", a.Status, a.Raw)
	}
	for i, tk := range ipTickets[:2] {
		if a := poll("per-ip", tk); a.Status != http.StatusOK {
			t.Fatalf("per-ip poll %d: %d %s", i, a.Status, a.Raw)
		}
	}
	wantRateLimited(t, poll("per-ip", ipTickets[2]), "status polls from this address")
	if after := r.CommandCount(t); after != before {
		t.Fatalf("status polls ran %d Redis commands, want 0: %v", after-before, r.CommandStats(t))
	}
}

// TestNodesHeartbeat: two nodes on one Redis count each other, so a
// degraded node would take half of a shared budget; a node that stops
// leaves the set.
func TestNodesHeartbeat(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	// n2 is closed by the test, not by nodetest.Start: it takes the same
	// patient limiter as n1 (nodetest.PatientLimiter).
	machine := nodetest.PatientLimiter()
	n1 := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	n2, err := node.Start(context.Background(), node.Config{Identity: "header", TrustedProxies: []string{"127.0.0.1"}, Addr: "127.0.0.1:0", DataDir: t.TempDir(), RedisURL: r.URL(), NATSURL: ns.URL(), Limiter: machine, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Tap: nodetest.Tap(t)})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "both nodes to count two", 10*time.Second, func() bool {
		return n1.Limiter.Stats().HealthyNodes == 2 && n2.Limiter.Stats().HealthyNodes == 2
	})
	if err := n2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "node 1 to count one", 10*time.Second, func() bool { return n1.Limiter.Stats().HealthyNodes == 1 })
	if s := n1.Limiter.Stats(); s.Degraded || s.RedisErrors != 0 {
		t.Errorf("node 1 limiter %+v: want healthy", s)
	}
}
