package node_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestClaimLimits: the claim budget per user, and one claim per device id
// and per payment fingerprint: a second user with the same device or card
// gets 409 limit_reached (without anyone's claim ids), the holder's own
// retries pass, and the refused claims took no stock.
func TestClaimLimits(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "claim-rate", limited(map[string]any{"claim": map[string]any{"user": rate(2)}}))
	nodetest.CreateSale(t, n, "per-device", limited(map[string]any{"one_claim_per_device": true}))
	nodetest.CreateSale(t, n, "per-card", limited(map[string]any{"one_claim_per_payment": true}))

	tokens := map[string]string{}
	for _, ev := range []string{"claim-rate", "per-device", "per-card"} {
		for _, u := range []string{"alice", "bob"} {
			tokens[ev+"/"+u] = nodetest.AdmitUser(t, n, ev, u)
		}
	}
	claimAs := func(ev, user, key string, extra map[string]string) nodetest.Answer {
		t.Helper()
		hdr := map[string]string{"Authorization": "Bearer " + tokens[ev+"/"+user], "X-User-ID": user, "Idempotency-Key": key}
		for k, v := range extra {
			hdr[k] = v
		}
		return nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/claim", hdr, nil)
	}
	dev := func(d string) map[string]string { return map[string]string{"X-Device-ID": d} }
	card := func(c string) map[string]string { return map[string]string{"X-Payment-Fingerprint": c} }
	steps := []struct {
		ev, user, key string
		extra         map[string]string
		status        int
		code          string
	}{
		{"claim-rate", "alice", "k1", nil, 201, ""},
		{"claim-rate", "alice", "k1", nil, 200, ""}, // a replay, within the burst
		{"claim-rate", "alice", "k1", nil, 429, "rate_limited"},
		{"claim-rate", "bob", "k1", nil, 201, ""},
		{"per-device", "alice", "k1", dev("phone-A"), 201, ""},
		{"per-device", "bob", "k1", dev("phone-A"), 409, "limit_reached"},
		{"per-device", "alice", "k1", dev("phone-A"), 200, ""},
		{"per-device", "bob", "k1", nil, 400, "bad_request"},
		{"per-device", "bob", "k1", dev("not a device"), 400, "bad_request"},
		{"per-device", "bob", "k1", dev("phone-B"), 201, ""},
		{"per-card", "alice", "k1", card("fp-1"), 201, ""},
		{"per-card", "bob", "k1", card("fp-1"), 409, "limit_reached"},
		{"per-card", "bob", "k1", card("fp-2"), 201, ""},
	}
	for i, s := range steps {
		a := claimAs(s.ev, s.user, s.key, s.extra)
		if a.Status != s.status || nodetest.Str(a.Body, "code") != s.code {
			t.Fatalf("step %d: %s claims in %s with %v: %d %s, want %d %s", i, s.user, s.ev, s.extra, a.Status, a.Raw, s.status, s.code)
		}
		if s.status == 409 && a.Body["claim_ids"] != nil {
			t.Fatalf("step %d: the refusal shows claim ids %v", i, a.Body["claim_ids"])
		}
		if s.status == 429 && a.Header.Get("Retry-After") == "" {
			t.Fatalf("step %d: 429 without Retry-After", i)
		}
	}
	for _, ev := range []string{"claim-rate", "per-device", "per-card"} {
		tot, err := n.Claims.Totals(context.Background(), claim.Sale{ID: ev, Buckets: 1})
		if err != nil {
			t.Fatal(err)
		}
		if tot.Granted != 2 {
			t.Errorf("%s granted %d units, want 2 (alice and bob once each)", ev, tot.Granted)
		}
	}
}
