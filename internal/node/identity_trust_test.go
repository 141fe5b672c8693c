package node_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/golang-jwt/jwt/v5"
)

// callLines sends one request whose headers may repeat (each value of hdr
// goes on its own header line) and decodes a JSON answer.
func callLines(t *testing.T, method, url string, hdr http.Header) nodetest.Answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := nodetest.Answer{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &a.Body); err != nil {
			t.Fatalf("%s %s: undecodable %q", method, url, raw)
		}
	}
	return a
}

// TestDefaultIdentityIsAnonymous: with no identity configured nobody names
// themselves: X-User-ID counts for nothing, each caller without a visitor
// cookie is a new visitor, and another's claims stay out of reach.
func TestDefaultIdentityIsAnonymous(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	nodetest.CreateSale(t, n, "dflt", openSale(10, 1, 0, 0, 1000))
	ev := n.URL() + "/events/dflt"
	a := nodetest.Call(t, http.MethodPost, ev+"/join", map[string]string{"X-User-ID": "alice"}, nil)
	b := nodetest.Call(t, http.MethodPost, ev+"/join", map[string]string{"X-User-ID": "alice"}, nil)
	if a.Status != http.StatusOK || b.Status != http.StatusOK {
		t.Fatalf("joins: %d %s, %d %s", a.Status, a.Raw, b.Status, b.Raw)
	}
	if v, _ := cookieOf(a, "anteroom_visitor"); v == "" {
		t.Errorf("join set no visitor cookie: %v", a.Header.Values("Set-Cookie"))
	}
	if nodetest.Str(a.Body, "ticket") == nodetest.Str(b.Body, "ticket") {
		t.Errorf("two callers sending X-User-ID alice share one queue place")
	}
	problemOK(t, nodetest.Call(t, http.MethodGet, ev+"/claims", map[string]string{"X-User-ID": "alice"}, nil), http.StatusUnauthorized, "unauthenticated")
}

// TestHeaderIdentityTrustedPeerOnly: header mode needs trusted proxies to
// start, and believes X-User-ID from them only; any other peer is 401.
func TestHeaderIdentityTrustedPeerOnly(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	_, err := node.Start(context.Background(), node.Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "header", Log: quiet})
	if err == nil || !strings.Contains(err.Error(), "TRUSTED_PROXIES") {
		t.Fatalf("header mode without trusted proxies started (err %v), want a refusal naming ANTEROOM_TRUSTED_PROXIES", err)
	}
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "header", TrustedProxies: []string{"192.0.2.10", "10.0.0.0/8"}})
	nodetest.CreateSale(t, n, "gw", openSale(10, 1, 0, 0, 1000))
	a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/gw/join", map[string]string{"X-User-ID": "alice"}, nil)
	problemOK(t, a, http.StatusUnauthorized, "unauthenticated")
	if !strings.Contains(nodetest.Str(a.Body, "detail"), "trusted proxy") {
		t.Errorf("detail %q, want it to say X-User-ID is believed from trusted proxies only", nodetest.Str(a.Body, "detail"))
	}
	if tot, err := n.Claims.Totals(context.Background(), claim.Sale{ID: "gw", Buckets: 1}); err != nil || tot.Granted != 0 {
		t.Errorf("totals %+v (%v)", tot, err)
	}
}

// TestIdentityHeaderOnce: an identity header sent on two lines is 400,
// never "the first one", on join, claim and lookup; in jwt mode so is a
// user token sent twice.
func TestIdentityHeaderOnce(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "once", openSale(10, 1, 0, 0, 1000))
	ev := n.URL() + "/events/once"
	token := nodetest.AdmitUser(t, n, "once", "alice")
	c := nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"X-User-ID": "alice", "Authorization": "Bearer " + token}, nil)
	if c.Status != http.StatusCreated {
		t.Fatalf("alice's claim: %d %s", c.Status, c.Raw)
	}
	twice := func(first, second string, kv ...string) http.Header {
		h := http.Header{}
		h.Add("X-User-ID", first)
		h.Add("X-User-ID", second)
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	problemOK(t, callLines(t, http.MethodPost, ev+"/join", twice("mallory", "bob")), http.StatusBadRequest, "bad_request")
	problemOK(t, callLines(t, http.MethodPost, ev+"/claim", twice("mallory", "alice", "Authorization", "Bearer "+token, "Idempotency-Key", "again")), http.StatusBadRequest, "bad_request")
	problemOK(t, callLines(t, http.MethodGet, ev+"/claims/"+nodetest.Str(c.Body, "claim_id"), twice("alice", "mallory")), http.StatusBadRequest, "bad_request")
	problemOK(t, callLines(t, http.MethodGet, ev+"/claims", twice("alice", "alice")), http.StatusBadRequest, "bad_request")

	s := newShop(t)
	jn := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "jwt", UserJWKS: s.file, UserIssuer: "https://shop.example", UserAudience: "anteroom"})
	nodetest.CreateSale(t, jn, "once-jwt", openSale(10, 1, 0, 0, 1000))
	h := http.Header{}
	h.Add("X-User-Token", sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims("mallory", nil)))
	h.Add("X-User-Token", sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims("alice", nil)))
	problemOK(t, callLines(t, http.MethodPost, jn.URL()+"/events/once-jwt/join", h), http.StatusBadRequest, "bad_request")
}

// TestForwardedForLines: X-Forwarded-For on several lines is one list, and
// the rightmost untrusted hop is counted, as with one line: a client's own
// first line does not make a new address.
func TestForwardedForLines(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "xff", limited(map[string]any{"join": map[string]any{"ip": rate(2)}}))
	url := n.URL() + "/events/xff/join"
	for i, forged := range []string{"203.0.113.1", "203.0.113.2"} {
		h := http.Header{}
		h.Set("X-User-ID", "x"+forged)
		h.Add("X-Forwarded-For", forged) // the client's line
		h.Add("X-Forwarded-For", "198.51.100.7")
		if a := callLines(t, http.MethodPost, url, h); a.Status != http.StatusOK {
			t.Fatalf("join %d: %d %s", i, a.Status, a.Raw)
		}
	}
	h := http.Header{}
	h.Set("X-User-ID", "x3")
	h.Add("X-Forwarded-For", "203.0.113.3")
	h.Add("X-Forwarded-For", "198.51.100.7")
	wantRateLimited(t, callLines(t, http.MethodPost, url, h), "join requests per ip")
	wantRateLimited(t, join(t, n, "xff", map[string]string{"X-User-ID": "x4", "X-Forwarded-For": "203.0.113.4, 198.51.100.7"}), "join requests per ip")
	if a := join(t, n, "xff", map[string]string{"X-User-ID": "x5", "X-Forwarded-For": "198.51.100.8"}); a.Status != http.StatusOK {
		t.Errorf("join from another address: %d %s", a.Status, a.Raw)
	}
}
