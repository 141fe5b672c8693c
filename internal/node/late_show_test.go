package node_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestLateNoShowHeldUnderMaxActive: with max_active 2, a is admitted but
// does not come; after the grace a is a no-show and c is admitted in a's
// place, so b and c are in checkout. When a comes late, status must not
// hand a a token (three people in checkout): a is told to wait, with no
// token, and is let in — before d, who joined after — once the shop
// finishes b's session. At no time are more than two people active.
func TestLateNoShowHeldUnderMaxActive(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	sale := openSale(100, 1, 0, 0, 1000)
	sale["max_active"] = 2
	sale["no_show_grace_seconds"] = 2
	sale["admission_ttl_seconds"] = 600
	sale["shop"] = map[string]any{"secret": shopSecret}
	nodetest.CreateSale(t, n, "late", sale)
	tickets := map[string]string{}
	for _, u := range []string{"a", "b", "c", "d"} { // positions 1 to 4
		j := join(t, n, "late", map[string]string{"X-User-ID": u})
		if j.Status != http.StatusOK {
			t.Fatalf("join %s: %d %s", u, j.Status, j.Raw)
		}
		tickets[u] = nodetest.Str(j.Body, "ticket")
	}
	status := func(u string) nodetest.Answer {
		t.Helper()
		s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/late/status", map[string]string{"Authorization": "Bearer " + tickets[u]}, nil)
		if s.Status != http.StatusOK {
			t.Fatalf("status of %s: %d %s", u, s.Status, s.Raw)
		}
		return s
	}
	tokenOf := func(u string) string { return nodetest.Str(status(u).Body, "admission_token") }
	atMostTwo := func() {
		t.Helper()
		if s, _ := n.Snapshots.Get("late"); s.Active > 2 {
			t.Fatalf("%d active, max_active 2", s.Active)
		}
	}
	var bTok string
	nodetest.WaitFor(t, "b admitted", 10*time.Second, func() bool { bTok = tokenOf("b"); return bTok != "" })
	// a's grace (2 s on the admission clock) passes: c is admitted instead.
	nodetest.WaitFor(t, "c admitted in the place of a, a no-show", 20*time.Second, func() bool { atMostTwo(); return tokenOf("c") != "" })

	throughTicks(t, n, "late", time.Second, func() {
		s := status("a")
		if tok := nodetest.Str(s.Body, "admission_token"); tok != "" {
			t.Fatalf("a late no-show got an admission token with b and c in checkout (max_active 2): %s", s.Raw)
		}
		if st := nodetest.Str(s.Body, "state"); st != "waiting" {
			t.Fatalf("a, held: state %q, want waiting", st)
		}
		if tokenOf("d") != "" {
			t.Fatal("d admitted with b and c in checkout")
		}
		atMostTwo()
	})

	jti := nodetest.Str(payloadOf(t, bTok), "jti")
	afterTick(t, n, "late") // b's session is known
	if f := shopCall(t, n, shopSecret, "/events/late/sessions/"+jti+"/finished", nil); f.Status != http.StatusOK {
		t.Fatalf("finish b: %d %s", f.Status, f.Raw)
	}
	nodetest.WaitFor(t, "a let in once b finished", 10*time.Second, func() bool {
		atMostTwo()
		if tokenOf("d") != "" {
			t.Fatal("d admitted before a, who came back earlier")
		}
		return tokenOf("a") != ""
	})
	throughTicks(t, n, "late", time.Second, func() {
		if tokenOf("d") != "" {
			t.Fatal("d admitted with a and c in checkout")
		}
		atMostTwo()
	})
}
