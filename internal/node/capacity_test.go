package node_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/web/shopper"
)

const shopSecret = "shop-secret-for-capacity-tests-0123"

// shopCall sends a shop call to path on n, signed with secret (none when
// secret is empty).
func shopCall(t *testing.T, n *node.Node, secret, path string, body []byte) nodetest.Answer {
	t.Helper()
	hdr := map[string]string{}
	if secret != "" {
		hdr[shopper.ShopSignatureHeader] = shopper.SignShopCall(secret, time.Now(), path, body)
	}
	if body != nil {
		hdr["Content-Type"] = "application/json"
	}
	return nodetest.Call(t, http.MethodPost, n.URL()+path, hdr, body)
}

// wantProblem fails unless a is a problem+json answer with status and code.
func wantProblem(t *testing.T, what string, a nodetest.Answer, status int, code string) {
	t.Helper()
	if a.Status != status || nodetest.Str(a.Body, "code") != code || !strings.HasPrefix(a.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("%s: %d %s %s, want %d problem+json %q", what, a.Status, a.Header.Get("Content-Type"), a.Raw, status, code)
	}
}

// TestShopFinishedSessionAdmitsNext runs a sale that keeps at most two
// people in checkout, over HTTP. Never more than two hold an admission at
// once; the shop's finished call with the admission token's jti admits the
// next person; calls with a bad or missing signature, or for an unknown
// jti, answer problem+json and admit nobody; a replay is harmless.
func TestShopFinishedSessionAdmitsNext(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	sale := openSale(100, 1, 0, 0, 1000)
	sale["max_active"] = 2
	sale["no_show_grace_seconds"] = 60
	sale["shop"] = map[string]any{"secret": shopSecret}
	nodetest.CreateSale(t, n, "checkout", sale)
	tickets := map[string]string{}
	for i := range 4 {
		u := fmt.Sprint("c", i)
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/checkout/join", map[string]string{"X-User-ID": u}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join: %d %s", j.Status, j.Raw)
		}
		tickets[u] = nodetest.Str(j.Body, "ticket")
	}
	finished := map[string]bool{}
	// admitted polls everyone not finished and returns the jti of each
	// admitted person; never more than two.
	admitted := func() map[string]string {
		out := map[string]string{}
		for u, ticket := range tickets {
			if finished[u] {
				continue
			}
			s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/checkout/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
			if tok := nodetest.Str(s.Body, "admission_token"); tok != "" {
				out[u] = nodetest.Str(payloadOf(t, tok), "jti")
			}
		}
		if len(out) > 2 {
			t.Fatalf("%d people in checkout at once, max_active 2: %v", len(out), out)
		}
		return out
	}
	var in map[string]string
	nodetest.WaitFor(t, "two in checkout", 10*time.Second, func() bool { in = admitted(); return len(in) == 2 })
	var who, jti string
	for u, j := range in {
		who, jti = u, j
	}
	afterTick(t, n, "checkout")
	path := "/events/checkout/sessions/" + jti + "/finished"
	wantProblem(t, "unsigned", shopCall(t, n, "", path, nil), http.StatusUnauthorized, "unauthenticated")
	wantProblem(t, "wrong secret", shopCall(t, n, "not-the-shop-secret-0123456789", path, nil), http.StatusUnauthorized, "unauthenticated")
	other := "/events/checkout/sessions/AAAAAAAAAAAAAAAAAAAAAA/finished"
	forged := map[string]string{shopper.ShopSignatureHeader: shopper.SignShopCall(shopSecret, time.Now(), other, nil)}
	wantProblem(t, "signature of another path", nodetest.Call(t, http.MethodPost, n.URL()+path, forged, nil), http.StatusUnauthorized, "unauthenticated")
	wantProblem(t, "unknown jti", shopCall(t, n, shopSecret, other, nil), http.StatusNotFound, "unknown_session")
	wantProblem(t, "malformed jti", shopCall(t, n, shopSecret, "/events/checkout/sessions/a.b/finished", nil), http.StatusBadRequest, "bad_request")
	if k, _ := r.Client(t).Exists(t.Context(), "ar:{checkout}:fin").Result(); k != 0 {
		t.Fatal("a refused call marked a session finished")
	}
	throughTicks(t, n, "checkout", time.Second, func() {
		if got := admitted(); len(got) != 2 {
			t.Fatalf("after refused calls: %v in checkout, want the same two", got)
		}
	})

	f := shopCall(t, n, shopSecret, path, nil)
	if f.Status != http.StatusOK || f.Body["replay"] != false || f.Body["finished"] != true {
		t.Fatalf("finished: %d %s", f.Status, f.Raw)
	}
	finished[who] = true
	nodetest.WaitFor(t, "the next person in checkout", 10*time.Second, func() bool { in = admitted(); return len(in) == 2 })
	if again := shopCall(t, n, shopSecret, path, nil); again.Status != http.StatusOK || again.Body["replay"] != true {
		t.Fatalf("replay: %d %s", again.Status, again.Raw)
	}
	throughTicks(t, n, "checkout", time.Second, func() {
		if got := admitted(); len(got) != 2 {
			t.Fatalf("after a replay: %v in checkout, want two", got)
		}
	})
	// The finished person's token keeps working at the gate until it
	// expires, but no longer counts: status still shows them admitted.
	s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/checkout/status", map[string]string{"Authorization": "Bearer " + tickets[who]}, nil)
	if nodetest.Str(s.Body, "state") != "admitted" {
		t.Fatalf("finished shopper: %s", s.Raw)
	}
}

// throughTicks runs check on every poll until the node's view of sale ev
// has moved d on the Redis clock (ticks passed, whatever the machine's
// speed).
func throughTicks(t *testing.T, n *node.Node, ev string, d time.Duration, check func()) {
	t.Helper()
	s, _ := n.Snapshots.Get(ev)
	from := s.ServerTime
	nodetest.WaitFor(t, "ticks to pass", 30*time.Second, func() bool {
		check()
		s, _ := n.Snapshots.Get(ev)
		return s.ServerTime.Sub(from) >= d
	})
}

// afterTick waits until the node has refreshed sale ev with a refresh that
// began after the call: what the node noted until now (issued tokens'
// jtis) is in Redis then.
func afterTick(t *testing.T, n *node.Node, ev string) {
	t.Helper()
	now := time.Now()
	var first time.Time
	nodetest.WaitFor(t, "a refresh", 10*time.Second, func() bool {
		s, _ := n.Snapshots.Get(ev)
		if first.IsZero() {
			if s.Refreshed.After(now) {
				first = s.Refreshed
			}
			return false
		}
		return s.Refreshed.After(first)
	})
}
