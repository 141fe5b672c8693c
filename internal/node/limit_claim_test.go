package node_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/web/protect"
)

// TestClaimLimits: the claim budget per user, and one claim per device id
// (from the gateway, a trusted proxy) and per payment fingerprint (signed
// by the shop): a second user with the same device or card gets 409
// signal_limit naming it (without anyone's claim ids), the holder's own
// retries pass, the refused claims took no stock, and a released claim
// gives its card back.
func TestClaimLimits(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "claim-rate", limited(map[string]any{"claim": map[string]any{"user": rate(2)}}))
	perDevice := limited(map[string]any{"one_claim_per_device": true})
	perDevice["signals"] = map[string]any{"device": map[string]any{"source": "proxy_header"}}
	nodetest.CreateSale(t, n, "per-device", perDevice)
	perCard := limited(map[string]any{"signal_claims": map[string]any{"payment": 1}})
	perCard["signals"] = map[string]any{"payment": map[string]any{"source": "signed_header"}}
	perCard["shop"] = map[string]any{"secret": shopSecret}
	nodetest.CreateSale(t, n, "per-card", perCard)

	tokens := map[string]string{}
	for _, ev := range []string{"claim-rate", "per-device", "per-card"} {
		for _, u := range []string{"alice", "bob", "carol"} {
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
	card := func(user, c string) map[string]string {
		return map[string]string{"X-Payment-Fingerprint": protect.SignSignal(shopSecret, time.Now(), "per-card", user, "payment", c)}
	}
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
		{"per-device", "bob", "k1", dev("phone-A"), 409, "signal_limit"},
		{"per-device", "alice", "k1", dev("phone-A"), 200, ""},
		{"per-device", "bob", "k1", nil, 400, "bad_request"},
		{"per-device", "bob", "k1", dev("not a device"), 400, "bad_request"},
		{"per-device", "bob", "k1", dev("phone-B"), 201, ""},
		{"per-card", "alice", "k1", card("alice", "fp-1"), 201, ""},
		{"per-card", "bob", "k1", card("bob", "fp-1"), 409, "signal_limit"},
		{"per-card", "bob", "k1", map[string]string{"X-Payment-Fingerprint": "fp-3"}, 401, "bad_signal"},
		{"per-card", "bob", "k1", card("alice", "fp-3"), 401, "bad_signal"},
		{"per-card", "bob", "k1", card("bob", "fp-2"), 201, ""},
	}
	aliceCard := ""
	for i, s := range steps {
		a := claimAs(s.ev, s.user, s.key, s.extra)
		if a.Status != s.status || nodetest.Str(a.Body, "code") != s.code {
			t.Fatalf("step %d: %s claims in %s with %v: %d %s, want %d %s", i, s.user, s.ev, s.extra, a.Status, a.Raw, s.status, s.code)
		}
		if s.status == 409 && a.Body["claim_ids"] != nil {
			t.Fatalf("step %d: the refusal shows claim ids %v", i, a.Body["claim_ids"])
		}
		if s.code == "signal_limit" && nodetest.Str(a.Body, "signal") != map[string]string{"per-device": "device", "per-card": "payment"}[s.ev] {
			t.Fatalf("step %d: the refusal names signal %q", i, nodetest.Str(a.Body, "signal"))
		}
		if s.ev == "per-card" && s.user == "alice" && s.status == 201 {
			aliceCard = nodetest.Str(a.Body, "claim_id")
		}
		if s.status == 429 && a.Header.Get("Retry-After") == "" {
			t.Fatalf("step %d: 429 without Retry-After", i)
		}
	}
	// Alice releases her claim: her card's count comes back for carol.
	rel := nodetest.Call(t, http.MethodPost, n.URL()+"/events/per-card/claims/"+aliceCard+"/release",
		map[string]string{"X-User-ID": "alice"}, nil)
	if rel.Status != http.StatusOK {
		t.Fatalf("alice releases %s: %d %s", aliceCard, rel.Status, rel.Raw)
	}
	if a := claimAs("per-card", "carol", "k1", card("carol", "fp-1")); a.Status != http.StatusCreated {
		t.Fatalf("carol claims with alice's released card: %d %s, want 201", a.Status, a.Raw)
	}
	for _, ev := range []string{"claim-rate", "per-device", "per-card"} {
		tot, err := n.Claims.Totals(context.Background(), claim.Sale{ID: ev, Buckets: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := int64(2) // alice and bob once each
		if ev == "per-card" {
			want = 3 // and carol after alice's release
		}
		if tot.Granted != want {
			t.Errorf("%s granted %d units, want %d", ev, tot.Granted, want)
		}
	}
}
