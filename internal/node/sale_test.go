package node_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/crowd"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestWholeSale runs one sale end to end — 5,000 shoppers joining, polling
// and claiming 1,000 units with a per-user limit of 1, some firing the same
// claim several times at once — against a real redis-server and JetStream,
// and against the embedded default, with the default identity (anonymous
// visitors, one cookie jar per shopper).
func TestWholeSale(t *testing.T) {
	backends := map[string]func(t *testing.T) node.Config{
		"redis-server+jetstream": func(t *testing.T) node.Config {
			r := testenv.StartRedis(t)
			ns := testenv.StartNATS(t)
			return node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}
		},
		"embedded": func(t *testing.T) node.Config { return node.Config{} },
	}
	for name, cfg := range backends {
		t.Run(name, func(t *testing.T) {
			n := nodetest.Start(t, cfg(t))
			const users, units = 5000, 1000
			sale := openSale(units, 1, 2*time.Second, 1, 4000)
			// The crowd comes from one loopback address: the per-IP join
			// budget, on by default for anonymous visitors, is turned off
			// as staff would for a sale behind one trusted edge.
			sale["limits"] = map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}}
			nodetest.CreateSale(t, n, "whole", sale)

			// The sale itself takes seconds (a 2 s start, 1000 units at
			// 4000 a second); the crowd's 5000 shoppers take what this
			// machine gives them: the bound only catches a hung crowd.
			ctx, cancel := context.WithTimeout(context.Background(), 5*nodetest.Patience)
			defer cancel()
			res, err := crowd.Run(ctx, crowd.Config{
				URLs: []string{n.URL()}, Event: "whole", Users: users, Concurrency: 128,
				ArrivalSpread: 2 * time.Second, Replays: 5, ReplayShare: 0.1,
			})
			if err != nil {
				t.Fatalf("crowd: %v", err)
			}
			if res.Errors > 0 {
				t.Fatalf("crowd saw %d errors, first: %v", res.Errors, res.FirstErrors)
			}
			if res.Joined != users {
				t.Errorf("joined %d, want %d", res.Joined, users)
			}
			if res.Granted != units {
				t.Errorf("granted to clients %d, want %d", res.Granted, units)
			}
			for u, ids := range res.Claims {
				if len(ids) > 1 {
					t.Errorf("user %s holds %d claims, limit 1", u, len(ids))
				}
			}
			if res.Replays == 0 || res.ReplayMismatch != 0 {
				t.Errorf("replays %d, mismatched %d: want some replays, all naming the first claim", res.Replays, res.ReplayMismatch)
			}
			var totals claim.Totals
			nodetest.WaitFor(t, "outbox to drain", 10*time.Second, func() bool {
				totals, err = n.Claims.Totals(ctx, claim.Sale{ID: "whole", Buckets: 1})
				return err == nil && totals.Outbox == 0
			})
			if totals.Granted != units || totals.Remaining != 0 {
				t.Errorf("redis granted %d remaining %d, want %d and 0", totals.Granted, totals.Remaining, units)
			}
			msgs, distinct, err := claim.CountGranted(ctx, n.JS, "whole")
			if err != nil {
				t.Fatal(err)
			}
			if msgs != units || distinct != units {
				t.Errorf("stream holds %d granted events with %d distinct claim ids, want %d and %d", msgs, distinct, units, units)
			}
			streamIDs := map[string]bool{}
			for _, ids := range res.Claims {
				for _, id := range ids {
					streamIDs[id] = true
				}
			}
			if len(streamIDs) != units {
				t.Errorf("clients hold %d distinct claim ids, want %d", len(streamIDs), units)
			}
			t.Logf("%s: %d users, %d granted, %d replays, %d requests in %s", name, res.Users, res.Granted, res.Replays, res.Requests, res.Elapsed.Round(time.Millisecond))
		})
	}
}

// TestClaimReplay shows the idempotency contract on one user: the same key
// returns the same claim with 200, another key meets the per-user limit and
// learns the held claim id.
func TestClaimReplay(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "replay", openSale(10, 1, 0, 0, 1000))
	token := nodetest.AdmitUser(t, n, "replay", "alice")

	ev := n.URL() + "/events/replay"
	hdr := map[string]string{"X-User-ID": "alice", "Authorization": "Bearer " + token, "Idempotency-Key": "order-1"}
	first := nodetest.Call(t, http.MethodPost, ev+"/claim", hdr, nil)
	if first.Status != http.StatusCreated {
		t.Fatalf("first claim: %d %s", first.Status, first.Raw)
	}
	again := nodetest.Call(t, http.MethodPost, ev+"/claim", hdr, nil)
	if again.Status != http.StatusOK || nodetest.Str(again.Body, "claim_id") != nodetest.Str(first.Body, "claim_id") {
		t.Fatalf("replay: %d %s, want 200 with claim %s", again.Status, again.Raw, nodetest.Str(first.Body, "claim_id"))
	}
	hdr["Idempotency-Key"] = "order-2"
	other := nodetest.Call(t, http.MethodPost, ev+"/claim", hdr, nil)
	if other.Status != http.StatusConflict || nodetest.Str(other.Body, "code") != "limit_reached" {
		t.Fatalf("second key: %d %s, want 409 limit_reached", other.Status, other.Raw)
	}
	held, _ := other.Body["claim_ids"].([]any)
	if len(held) != 1 || held[0] != nodetest.Str(first.Body, "claim_id") {
		t.Errorf("held claim ids %v, want [%s]", held, nodetest.Str(first.Body, "claim_id"))
	}
	look := nodetest.Call(t, http.MethodGet, ev+"/claims/"+nodetest.Str(first.Body, "claim_id"), map[string]string{"X-User-ID": "alice"}, nil)
	if look.Status != http.StatusOK || nodetest.Str(look.Body, "status") != "pending" {
		t.Errorf("lookup: %d %s", look.Status, look.Raw)
	}
	mallory := nodetest.Call(t, http.MethodGet, ev+"/claims/"+nodetest.Str(first.Body, "claim_id"), map[string]string{"X-User-ID": "mallory"}, nil)
	if mallory.Status != http.StatusNotFound {
		t.Errorf("another user's lookup: %d, want 404", mallory.Status)
	}
	totals, err := n.Claims.Totals(context.Background(), claim.Sale{ID: "replay", Buckets: 1})
	if err != nil || totals.Granted != 1 {
		t.Errorf("granted %d (%v), want 1", totals.Granted, err)
	}
}
