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
	"github.com/anteroom/anteroom/web/protect"
)

// registrant is one identity in a lottery: its visitor cookie and ticket.
type registrant struct{ visitor, ticket string }

// floodJoins sends n joins without a cookie from this one address, as a
// script minting free identities does, and returns the identities that got
// a ticket and the refusals by status and code.
func floodJoins(t *testing.T, nd *node.Node, ev string, n int) ([]registrant, map[string]int) {
	t.Helper()
	var in []registrant
	refused := map[string]int{}
	for range n {
		j := nodetest.Call(t, http.MethodPost, nd.URL()+"/events/"+ev+"/join", nil, nil)
		if j.Status == http.StatusOK {
			v, _ := cookieOf(j, "anteroom_visitor")
			in = append(in, registrant{v, nodetest.Str(j.Body, "ticket")})
			continue
		}
		refused[fmt.Sprint(j.Status, " ", nodetest.Str(j.Body, "code"))]++
		if j.Status == http.StatusTooManyRequests {
			wantRateLimited(t, j, "per ip")
		}
	}
	return in, refused
}

// joinLikeThePage joins ev as a fresh browser does: it fetches a challenge
// (which names the visitor), solves it when the sale asks, and joins.
func joinLikeThePage(t *testing.T, nd *node.Node, ev string) registrant {
	t.Helper()
	base := nd.URL() + "/events/" + ev
	ch := nodetest.Call(t, http.MethodGet, base+"/challenge", nil, nil)
	visitor, _ := cookieOf(ch, "anteroom_visitor")
	hdr := map[string]string{}
	if visitor != "" {
		hdr["Cookie"] = "anteroom_visitor=" + visitor
	}
	if ch.Body["required"] == true {
		c := nodetest.Str(ch.Body, "challenge")
		hdr["X-PoW"] = c + ":" + protect.SolvePoW(c, int(ch.Body["bits"].(float64)))
	}
	j := nodetest.Call(t, http.MethodPost, base+"/join", hdr, nil)
	if j.Status != http.StatusOK {
		t.Fatalf("join like the page: %d %s", j.Status, j.Raw)
	}
	if v, _ := cookieOf(j, "anteroom_visitor"); v != "" {
		visitor = v
	}
	return registrant{visitor, nodetest.Str(j.Body, "ticket")}
}

// drawAndClaim polls every registrant's status until each knows the
// outcome; the admitted claim at once. It returns who got a unit.
func drawAndClaim(t *testing.T, nd *node.Node, ev string, rs []registrant) map[int]bool {
	t.Helper()
	base := nd.URL() + "/events/" + ev
	won, done := map[int]bool{}, map[int]bool{}
	nodetest.WaitFor(t, "every registrant to learn the outcome", 30*time.Second, func() bool {
		for i, r := range rs {
			if done[i] {
				continue
			}
			cookie := "anteroom_visitor=" + r.visitor
			s := nodetest.Call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + r.ticket, "Cookie": cookie}, nil)
			switch nodetest.Str(s.Body, "state") {
			case "admitted":
				c := nodetest.Call(t, http.MethodPost, base+"/claim", map[string]string{"Authorization": "Bearer " + nodetest.Str(s.Body, "admission_token"), "Cookie": cookie}, nil)
				won[i], done[i] = c.Status == http.StatusCreated, true
			case "not_selected", "sold_out":
				done[i] = true
			}
		}
		return len(done) == len(rs)
	})
	return won
}

// TestSybilLotteryFlood is issue 12 point 6: in anonymous mode, 20
// cookie-less joins from one address took both units of a two-unit
// lottery. With the default limits a lottery in anonymous mode asks for a
// proof of work, so the free flood registers nobody, while a browser that
// solves the challenge registers and wins.
func TestSybilLotteryFlood(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "anonymous"})
	sale := openSale(2, 1, 6*time.Second, 0, 100)
	sale["mode"] = "lottery"
	nodetest.CreateSale(t, n, "draw", sale)

	sybils, refused := floodJoins(t, n, "draw", 20)
	if len(sybils) > 0 || refused["403 pow_required"] != 20 {
		t.Errorf("20 cookie-less joins without a proof of work: %d registered, refused %v; want all 403 pow_required", len(sybils), refused)
	}
	honest := joinLikeThePage(t, n, "draw")
	won := drawAndClaim(t, n, "draw", append(sybils, honest))
	taken := 0
	for i := range sybils {
		if won[i] {
			taken++
		}
	}
	if taken > 0 {
		t.Fatalf("the flood's identities took %d of 2 units", taken)
	}
	if !won[len(sybils)] {
		t.Errorf("the honest visitor, alone in the draw, did not get a unit")
	}
}

// TestSybilJoinBudget: in anonymous mode the default per-IP join budget
// stops a flood of cookie-less joins from one address with 429 and
// Retry-After; a sale whose staff turned the budget off, or the proof of
// work of a lottery off, takes the flood as before.
func TestSybilJoinBudget(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "anonymous"})
	nodetest.CreateSale(t, n, "flash", openSale(10, 1, 0, 0, 1000))

	in, refused := floodJoins(t, n, "flash", 20)
	if len(in) == 0 || len(in) > 10 || refused["429 rate_limited"] != 20-len(in) {
		t.Fatalf("20 cookie-less joins from one address: %d joined, refused %v; want at most 10 joined and the rest 429 rate_limited", len(in), refused)
	}
	t.Logf("default per-IP join budget: %d of 20 joins from one address got through", len(in))
	// A repeated join with a cookie is also counted: the budget is per
	// address, whoever the caller says they are.
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/flash/join", map[string]string{"Cookie": "anteroom_visitor=" + in[0].visitor}, nil); a.Status != http.StatusTooManyRequests {
		t.Errorf("join with a cookie after the budget ran out: %d %s, want 429", a.Status, a.Raw)
	}

	// Staff turn the budget off: the flood gets through.
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	off := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/flash", admin, []byte(`{"limits":{"join":{"ip":{"per_second":-1}}}}`))
	if off.Status != http.StatusOK {
		t.Fatalf("turn the per-IP budget off: %d %s", off.Status, off.Raw)
	}
	bad := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/flash", admin, []byte(`{"limits":{"pow":{"enabled":"yes"}}}`))
	if bad.Status != http.StatusBadRequest || nodetest.Str(bad.Body, "code") != "bad_request" || !strings.Contains(nodetest.Str(bad.Body, "detail"), "limits.pow.enabled") {
		t.Errorf("pow.enabled \"yes\": %d %s, want 400 naming limits.pow.enabled", bad.Status, bad.Raw)
	}
	fr, _ := off.Body["friction"].(map[string]any)
	if ip, _ := fr["join_ip"].(map[string]any); fr["anonymous_visitors"] != true || ip["per_second"] != -1.0 {
		t.Errorf("admin view of the budget turned off: friction %v", fr)
	}
	if in, refused := floodJoins(t, n, "flash", 20); len(in) != 20 {
		t.Errorf("per-IP budget off: %d of 20 joined, refused %v", len(in), refused)
	}

	// A lottery whose staff turned the proof of work and the budget off.
	sale := openSale(2, 1, 30*time.Minute, 0, 100)
	sale["mode"] = "lottery"
	sale["limits"] = map[string]any{"pow": map[string]any{"enabled": false}, "join": map[string]any{"ip": map[string]any{"per_second": -1}}}
	nodetest.CreateSale(t, n, "open-draw", sale)
	if in, refused := floodJoins(t, n, "open-draw", 20); len(in) != 20 {
		t.Errorf("proof of work and budget off: %d of 20 joined, refused %v", len(in), refused)
	}
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/events/open-draw/challenge", nil, nil)
	if a.Status != http.StatusOK || a.Body["required"] != false {
		t.Errorf("challenge of a lottery with the proof of work off: %d %s, want required false", a.Status, a.Raw)
	}
}

// TestJoinLimitPerIPv6Prefix: behind a trusted proxy, IPv6 clients share
// one per-IP budget per /64 (one household or host hands out addresses
// from its /64 at will); different /64s, and IPv4 addresses, count apart.
func TestJoinLimitPerIPv6Prefix(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "header", TrustedProxies: []string{"127.0.0.1"}})
	nodetest.CreateSale(t, n, "v6", limited(map[string]any{"join": map[string]any{"ip": rate(2)}}))
	for i, s := range []struct {
		xff     string
		limited bool
	}{
		{"2001:db8:1:2::1", false},
		{"2001:db8:1:2:ffff:ffff:ffff:fffe", false},
		{"2001:db8:1:2::3", true},        // a third address of the same /64
		{"[2001:db8:1:2::4]:5555", true}, // with a port
		{"2001:db8:1:3::1", false},       // the next /64
		{"::ffff:198.51.100.7", false},   // IPv4-mapped counts as IPv4
		{"198.51.100.7", false},          // the same IPv4 address
		{"198.51.100.7", true},           // its third join
		{"198.51.100.8", false},          // IPv4 counts per address
	} {
		a := join(t, n, "v6", map[string]string{"X-User-ID": fmt.Sprint("u", i), "X-Forwarded-For": s.xff})
		switch {
		case s.limited:
			wantRateLimited(t, a, "per ip")
		case a.Status != http.StatusOK:
			t.Errorf("step %d: join from %s: %d %s, want 200", i, s.xff, a.Status, a.Raw)
		}
	}
}
