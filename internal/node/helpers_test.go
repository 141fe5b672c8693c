package node_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
)

// openSale returns a sale opening now, starting after startIn, with a
// shuffle window of window seconds.
func openSale(supply, limit int, startIn time.Duration, window int, rate float64) map[string]any {
	now := time.Now().UTC().Truncate(time.Second)
	return map[string]any{
		"name": "test sale", "supply": supply, "per_user_limit": limit,
		"prequeue_opens_at": now.Add(-time.Second), "starts_at": now.Add(startIn),
		"ends_at": now.Add(time.Hour), "random_window_seconds": window,
		"admit_rate_per_second": rate,
	}
}

// registerLottery creates a lottery ev of supply units (limit 1, drawn two
// seconds from now, 100 admitted a second) and registers entrants users
// prefix0, prefix1, … by X-User-ID; it returns their tickets by user.
func registerLottery(t *testing.T, n *node.Node, ev string, supply, entrants int, prefix string) map[string]string {
	t.Helper()
	sale := openSale(supply, 1, 2*time.Second, 0, 100)
	sale["mode"] = "lottery"
	nodetest.CreateSale(t, n, ev, sale)
	tickets := map[string]string{}
	for i := range entrants {
		u := fmt.Sprint(prefix, i)
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/join", map[string]string{"X-User-ID": u}, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("register: %d %s", j.Status, j.Raw)
		}
		tickets[u] = nodetest.Str(j.Body, "ticket")
	}
	return tickets
}
