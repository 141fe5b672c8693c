package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestStartedWindowIsLocked starts an FCFS sale with a long shuffle window;
// once the window has started, changes that would close it (FCFS → lottery,
// a window of 0) or move it (a longer window) are 409 locked, and other
// changes still go through.
func TestStartedWindowIsLocked(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	nodetest.CreateSale(t, n, "window", openSale(3, 1, time.Second, 600, 100))
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	put := func(body map[string]any) nodetest.Answer {
		raw, _ := json.Marshal(body)
		return nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/window", admin, raw)
	}
	nodetest.WaitFor(t, "the sale to start", 10*time.Second, func() bool {
		return nodetest.Str(nodetest.Call(t, http.MethodGet, n.URL()+"/events/window", nil, nil).Body, "state") == "open"
	})
	for _, change := range []map[string]any{
		{"mode": "lottery"},
		{"random_window_seconds": 0},
		{"random_window_seconds": 1200},
	} {
		if a := put(change); a.Status != http.StatusConflict || nodetest.Str(a.Body, "code") != "locked" {
			t.Errorf("%v once the window started: %d %s, want 409 locked", change, a.Status, a.Raw)
		}
	}
	if a := put(map[string]any{"admit_rate_per_second": 7}); a.Status != http.StatusOK {
		t.Errorf("rate change in the window: %d %s, want 200", a.Status, a.Raw)
	}
}

// TestStockAgreesWithSavedConfig changes the supply of an upcoming sale
// through the admin API while another writer keeps saving the
// configuration (as a second admin would): whatever the admin API answers,
// the stock laid in Redis always matches the stored configuration.
func TestStockAgreesWithSavedConfig(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Manual: true})
	sale := openSale(10, 1, time.Hour, 0, 100)
	sale["ends_at"] = time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	nodetest.CreateSale(t, n, "agree", sale)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	configs := event.NewStore(r.Client(t))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the other writer: saves what it read, bumping the version
		defer wg.Done()
		for ctx.Err() == nil {
			c, err := configs.Get(ctx, "agree")
			if err != nil {
				return
			}
			if _, err := configs.Put(ctx, c); err != nil && !errors.Is(err, event.ErrConflict) {
				return
			}
		}
	}()
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	refused := 0
	for i := range 40 {
		raw, _ := json.Marshal(map[string]any{"supply": 10 + i%2*10})
		a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/agree", admin, raw)
		if a.Status != http.StatusOK {
			refused++
		}
		// The other writer never changes the supply: after every answer the
		// stock matches the stored configuration.
		c, err := configs.Get(context.Background(), "agree")
		if err != nil {
			t.Fatal(err)
		}
		left, err := n.Claims.Remaining(context.Background(), claim.Sale{ID: "agree", Buckets: c.Buckets})
		if err != nil {
			t.Fatal(err)
		}
		if left != c.OnSale() {
			t.Fatalf("change %d answered %d: stock %d in Redis, stored configuration has %d on sale", i, a.Status, left, c.OnSale())
		}
	}
	cancel()
	wg.Wait()
	t.Logf("%d of 40 admin changes refused under a concurrent writer; stock agrees", refused)
}
