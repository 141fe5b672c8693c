package node_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
)

// claimN makes n claims (keys k0…) with admission token tok as user and
// fails unless each is granted.
func claimN(t *testing.T, nd *node.Node, ev, user, tok string, n int) {
	t.Helper()
	for k := range n {
		c := nodetest.Call(t, http.MethodPost, nd.URL()+"/events/"+ev+"/claim", map[string]string{
			"X-User-ID": user, "Authorization": "Bearer " + tok, "Idempotency-Key": fmt.Sprint("k", k),
		}, nil)
		if c.Status != http.StatusCreated {
			t.Fatalf("%s claim %d: %d %s", user, k, c.Status, c.Raw)
		}
	}
}

// TestMaxActiveCountsPendingPeople: max_active counts people, not pending
// claims. A queue shopper holding three pending claims is one person; two
// bypass-pass holders (who share one position, PassPosition) with two and
// one pending claims are two people. With max_active 4 the frontier must
// admit exactly one more person — not stop because six claims are pending.
func TestMaxActiveCountsPendingPeople(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	// No order worker: every claim stays pending.
	sale := openSale(100, 3, 0, 0, 1000)
	sale["max_active"] = 50
	sale["no_show_grace_seconds"] = 60
	nodetest.CreateSale(t, n, "people", sale)
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}

	claimN(t, n, "people", "a", nodetest.AdmitUser(t, n, "people", "a"), 3)
	m := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/people/passes", admin, []byte(`{"uses":0}`))
	if m.Status != http.StatusCreated {
		t.Fatalf("mint: %d %s", m.Status, m.Raw)
	}
	for user, claims := range map[string]int{"p1": 2, "p2": 1} {
		j := join(t, n, "people", map[string]string{"X-User-ID": user, tokens.PassHeader: nodetest.Str(m.Body, "pass")})
		if j.Status != http.StatusOK {
			t.Fatalf("redeem %s: %d %s", user, j.Status, j.Raw)
		}
		claimN(t, n, "people", user, nodetest.Str(j.Body, "admission_token"), claims)
	}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/people", admin, []byte(`{"max_active":4}`)); a.Status != http.StatusOK {
		t.Fatalf("max_active 4: %d %s", a.Status, a.Raw)
	}
	afterTick(t, n, "people")

	tickets := map[string]string{}
	for _, u := range []string{"b", "c", "d", "e"} {
		j := join(t, n, "people", map[string]string{"X-User-ID": u})
		if j.Status != http.StatusOK {
			t.Fatalf("join %s: %d %s", u, j.Status, j.Raw)
		}
		tickets[u] = nodetest.Str(j.Body, "ticket")
	}
	admitted := func() int {
		in := 0
		for _, ticket := range tickets {
			s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/people/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
			if nodetest.Str(s.Body, "admission_token") != "" {
				in++
			}
		}
		return in
	}
	nodetest.WaitFor(t, "one more person admitted (3 people in checkout, max_active 4)", 10*time.Second, func() bool { return admitted() >= 1 })
	throughTicks(t, n, "people", time.Second, func() {
		if in := admitted(); in > 1 {
			t.Fatalf("%d more people admitted; a, p1, p2 and one more make max_active 4", in)
		}
	})
	if s, _ := n.Snapshots.Get("people"); s.Active != 4 {
		t.Fatalf("active %d, want 4 people (a, p1, p2 and the one admitted)", s.Active)
	}
}
