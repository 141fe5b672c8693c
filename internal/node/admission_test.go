package node_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestMaxActiveCountsPeople runs a sale with per_user_limit 5 and
// max_active 2: each admitted shopper claims five units, and at no time are
// more than two people admitted without having finished (claims granted and
// confirmed). Units sold must not make room for more people.
func TestMaxActiveCountsPeople(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	if err := n.StartWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	sale := openSale(100, 5, 0, 0, 1000)
	sale["max_active"] = 2
	nodetest.CreateSale(t, n, "people", sale)
	const shoppers = 10
	tickets := map[string]string{}
	for i := range shoppers {
		u := fmt.Sprint("p", i)
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/people/join", map[string]string{"X-User-ID": u}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join: %d %s", j.Status, j.Raw)
		}
		tickets[u] = nodetest.Str(j.Body, "ticket")
	}
	done := map[string]bool{}
	most := 0
	nodetest.WaitFor(t, "every shopper to buy", 30*time.Second, func() bool {
		admitted := map[string]string{}
		for u, ticket := range tickets {
			if done[u] {
				continue
			}
			s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/people/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
			if tok := nodetest.Str(s.Body, "admission_token"); tok != "" {
				admitted[u] = tok
			}
		}
		most = max(most, len(admitted))
		if len(admitted) > 2 {
			t.Fatalf("%d people admitted and not finished at once, max_active 2", len(admitted))
		}
		for u, tok := range admitted {
			for k := range 5 {
				c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/people/claim", map[string]string{
					"X-User-ID": u, "Authorization": "Bearer " + tok, "Idempotency-Key": fmt.Sprint("k", k),
				}, nil)
				if c.Status != http.StatusCreated {
					t.Fatalf("%s claim %d: %d %s", u, k, c.Status, c.Raw)
				}
			}
			done[u] = true
		}
		return len(done) == shoppers
	})
	t.Logf("at most %d people active at once", most)
}

// TestLotteryReleasedUnitGoesToNextDrawn draws two winners for two units;
// when a winner releases their claim, the next drawn position is admitted
// and buys the unit instead of it staying unsold.
func TestLotteryReleasedUnitGoesToNextDrawn(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	const entrants = 6
	tickets := registerLottery(t, n, "again", 2, entrants, "d")
	claims := map[string]string{} // user -> claim id
	positions := map[string]int64{}
	poll := func() {
		for u, ticket := range tickets {
			if claims[u] != "" {
				continue
			}
			s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/again/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
			if p, ok := s.Body["position"].(float64); ok {
				positions[u] = int64(p)
			}
			if tok := nodetest.Str(s.Body, "admission_token"); tok != "" {
				c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/again/claim", map[string]string{"X-User-ID": u, "Authorization": "Bearer " + tok}, nil)
				if c.Status == http.StatusCreated {
					claims[u] = nodetest.Str(c.Body, "claim_id")
				}
			}
		}
	}
	nodetest.WaitFor(t, "two winners", 20*time.Second, func() bool { poll(); return len(claims) == 2 })
	var first string
	for u := range claims {
		if first == "" || positions[u] < positions[first] {
			first = u
		}
	}
	rel := nodetest.Call(t, http.MethodPost, n.URL()+"/events/again/claims/"+claims[first]+"/release", map[string]string{"X-User-ID": first}, nil)
	if rel.Status != http.StatusOK || nodetest.Str(rel.Body, "status") != "released" {
		t.Fatalf("release: %d %s", rel.Status, rel.Raw)
	}
	delete(tickets, first) // the winner who released walks away
	nodetest.WaitFor(t, "the next drawn position to buy the released unit", 10*time.Second, func() bool { poll(); return len(claims) == 3 })
	for u := range claims {
		if u != first && positions[u] > 3 {
			t.Errorf("%s bought from position %d, want the next drawn (3)", u, positions[u])
		}
	}
}
