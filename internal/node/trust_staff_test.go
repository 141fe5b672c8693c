package node_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestAdminAuthThrottled: after a handful of wrong admin tokens from one
// address (bearer or console sign-in), every node answers that address
// 429 rate_limited with Retry-After — even for the right token, so a
// blocked guesser learns nothing — while other addresses are unaffected.
// IPv6 addresses count per /64.
func TestAdminAuthThrottled(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	// The nodes trust loopback as their proxy, so X-Forwarded-For names
	// the client address.
	a := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TrustedProxies: []string{"127.0.0.1"}})
	b := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TrustedProxies: []string{"127.0.0.1"}, AdminToken: a.AdminToken})
	nodetest.CreateSale(t, a, "guarded", openSale(10, 1, 0, 0, 10))
	from := func(addr, token string) map[string]string {
		return map[string]string{"X-Forwarded-For": addr, "Authorization": "Bearer " + token}
	}
	adminGet := func(n *node.Node, hdr map[string]string) nodetest.Answer {
		return nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/guarded", hdr, nil)
	}
	const attacker = "203.0.113.7"
	for i := range 5 {
		wrong := "guess-" + strconv.Itoa(i) + "-0123456789abcdefghij"
		problemOK(t, adminGet(a, from(attacker, wrong)), http.StatusUnauthorized, "unauthenticated")
	}
	for name, res := range map[string]nodetest.Answer{
		"bearer, node A, right token": adminGet(a, from(attacker, a.AdminToken)),
		"bearer, node B, wrong token": adminGet(b, from(attacker, "another-guess-0123456789abcdef")),
		"sign-in, node B, right token": nodetest.Call(t, http.MethodPost, b.URL()+"/admin/session",
			map[string]string{"X-Forwarded-For": attacker, "Content-Type": "application/json"}, []byte(`{"token":"`+a.AdminToken+`"}`)),
	} {
		if res.Status != http.StatusTooManyRequests || nodetest.Str(res.Body, "code") != "rate_limited" {
			t.Errorf("%s after 5 failures: %d %s, want 429 rate_limited", name, res.Status, res.Raw)
			continue
		}
		if ra, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Errorf("%s: Retry-After %q, want seconds", name, res.Header.Get("Retry-After"))
		}
		if strings.Contains(string(res.Raw), a.AdminToken) {
			t.Errorf("%s: the answer shows the token", name)
		}
	}
	if res := adminGet(b, from("198.51.100.1", a.AdminToken)); res.Status != http.StatusOK {
		t.Errorf("another address with the right token: %d %s", res.Status, res.Raw)
	}

	// Console sign-in failures count too, and IPv6 counts per /64.
	for i := range 5 {
		res := nodetest.Call(t, http.MethodPost, a.URL()+"/admin/session", map[string]string{"X-Forwarded-For": "2001:db8:1:2::" + strconv.Itoa(i+1), "Content-Type": "application/json"}, []byte(`{"token":"wrong-token-0123456789abcdefgh"}`))
		problemOK(t, res, http.StatusUnauthorized, "unauthenticated")
	}
	problemOK(t, adminGet(b, from("2001:db8:1:2::ffff", a.AdminToken)), http.StatusTooManyRequests, "rate_limited")
	if res := adminGet(b, from("2001:db8:1:3::1", a.AdminToken)); res.Status != http.StatusOK {
		t.Errorf("a neighbouring /64: %d %s", res.Status, res.Raw)
	}
}

// signIn signs a console in on n and returns its cookie and CSRF token.
func signIn(t *testing.T, n *node.Node) (cookie, csrf string) {
	t.Helper()
	in := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/session", map[string]string{"Content-Type": "application/json"}, []byte(`{"token":"`+n.AdminToken+`"}`))
	if in.Status != http.StatusOK {
		t.Fatalf("sign in: %d %s", in.Status, in.Raw)
	}
	return strings.SplitN(in.Header.Get("Set-Cookie"), ";", 2)[0], nodetest.Str(in.Body, "csrf_token")
}

// TestSessionsRevokedEverywhere: signing out on one node ends the session
// on every node, and DELETE /admin/sessions signs every console out.
func TestSessionsRevokedEverywhere(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	a := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	b := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), AdminToken: a.AdminToken})
	list := func(n *node.Node, cookie string) nodetest.Answer {
		return nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events", map[string]string{"Cookie": cookie}, nil)
	}
	cookie, csrf := signIn(t, a)
	for _, n := range []*node.Node{a, b} {
		if res := list(n, cookie); res.Status != http.StatusOK {
			t.Fatalf("signed-in list on %s: %d %s", n.URL(), res.Status, res.Raw)
		}
	}
	out := nodetest.Call(t, http.MethodDelete, b.URL()+"/admin/session", map[string]string{"Cookie": cookie, "X-CSRF-Token": csrf}, nil)
	if out.Status != http.StatusNoContent {
		t.Fatalf("sign out on B: %d %s", out.Status, out.Raw)
	}
	for _, n := range []*node.Node{a, b} {
		problemOK(t, list(n, cookie), http.StatusUnauthorized, "unauthenticated")
		problemOK(t, nodetest.Call(t, http.MethodGet, n.URL()+"/admin/session", map[string]string{"Cookie": cookie}, nil), http.StatusUnauthorized, "unauthenticated")
	}

	first, _ := signIn(t, a)
	second, csrf2 := signIn(t, b)
	// Refused without the CSRF token, like every change made with a cookie.
	problemOK(t, nodetest.Call(t, http.MethodDelete, a.URL()+"/admin/sessions", map[string]string{"Cookie": second}, nil), http.StatusForbidden, "forbidden")
	if res := list(a, first); res.Status != http.StatusOK {
		t.Fatalf("a refused revocation ended a session: %d %s", res.Status, res.Raw)
	}
	all := nodetest.Call(t, http.MethodDelete, a.URL()+"/admin/sessions", map[string]string{"Cookie": second, "X-CSRF-Token": csrf2}, nil)
	if all.Status != http.StatusNoContent {
		t.Fatalf("revoke all: %d %s", all.Status, all.Raw)
	}
	for _, c := range []string{first, second} {
		for _, n := range []*node.Node{a, b} {
			problemOK(t, list(n, c), http.StatusUnauthorized, "unauthenticated")
		}
	}
	// The bearer token still works, and may revoke too.
	if res := nodetest.Call(t, http.MethodDelete, b.URL()+"/admin/sessions", map[string]string{"Authorization": "Bearer " + a.AdminToken}, nil); res.Status != http.StatusNoContent {
		t.Errorf("revoke all with the bearer token: %d %s", res.Status, res.Raw)
	}
}
