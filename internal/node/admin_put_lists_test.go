package node_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestPutReplacesListElements: a list in a PUT of an event replaces the
// stored one whole. encoding/json decodes an array into a slice's
// elements in place, so an element's field the body left out kept the
// stored element's at the same index: a lane sent without starts_at
// kept its old start, and a webhook of a new URL sent without a secret
// took the secret of the webhook stored at its index (saved, 200)
// instead of being refused for want of one.
func TestPutReplacesListElements(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	sale := openSale(10, 1, 2*time.Hour, 0, 10)
	sale["prequeue_opens_at"] = time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	sale["ends_at"] = time.Now().UTC().Add(5 * time.Hour).Truncate(time.Second)
	sale["lanes"] = []map[string]any{{"name": "early", "share": 0.1, "starts_at": time.Now().UTC().Add(90 * time.Minute).Truncate(time.Second),
		"claim": map[string]string{"name": "tier", "value": "gold"}}}
	sale["webhooks"] = []map[string]any{{"url": "https://a.example/hook", "secret": "the secret of webhook a"}}
	nodetest.CreateSale(t, n, "gala", sale)

	a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/gala", admin, []byte(`{"lanes":[{"name":"early","share":0.2}]}`))
	if a.Status != http.StatusOK {
		t.Fatalf("put lanes: %d %s", a.Status, a.Raw)
	}
	lane := a.Body["config"].(map[string]any)["lanes"].([]any)[0].(map[string]any)
	if lane["starts_at"] != nil || lane["claim"] != nil || lane["share"] != 0.2 {
		t.Errorf("the lane sent without starts_at and claim is stored as %v", lane)
	}
	a = nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/gala", admin, []byte(`{"webhooks":[{"url":"https://b.example/hook"}]}`))
	if a.Status != http.StatusBadRequest {
		raw, _ := json.Marshal(a.Body)
		t.Errorf("a new webhook URL without a secret: %d %s, want 400 (it must not take a's secret)", a.Status, raw)
	}
	// The same URL without a secret keeps its own, by URL.
	a = nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/gala", admin, []byte(`{"webhooks":[{"url":"https://a.example/hook","events":["sold_out"]}]}`))
	if a.Status != http.StatusOK {
		t.Errorf("the same webhook without its secret: %d %s, want 200 (kept)", a.Status, a.Raw)
	}
}
