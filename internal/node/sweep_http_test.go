package node_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestSweepAndCancelHTTP: three shoppers claim from one network (the sweep
// groups them by its /24's keyed hash, never the address), the operator
// cancels the group with restock, the shoppers' lookups answer
// cancelled, the stock comes back, and a second cancellation of the same
// claims is 409 not_cancellable changing nothing. Bad input (no restock,
// both claims and a group, no reason, an unknown dimension) is 400, the
// CSV has one row per claim, and the sweep is not a viewer's.
func TestSweepAndCancelHTTP(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "ring", openSale(10, 1, 0, 0, 1000))
	ev := n.URL() + "/events/ring"
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken, "Content-Type": "application/json"}
	ids := map[string]string{}
	for _, u := range []string{"r1", "r2", "r3"} {
		token := nodetest.AdmitUser(t, n, "ring", u)
		a := nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"X-User-ID": u, "Authorization": "Bearer " + token, "Idempotency-Key": "k"}, nil)
		if a.Status != http.StatusCreated {
			t.Fatalf("claim of %s: %d %s", u, a.Status, a.Raw)
		}
		ids[u] = nodetest.Str(a.Body, "claim_id")
	}
	sw := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/ring/sweep", admin, nil)
	groups, _ := sw.Body["groups"].([]any)
	if sw.Status != http.StatusOK || len(groups) != 1 || strings.Contains(string(sw.Raw), "127.0.0") {
		t.Fatalf("sweep: %d %s, want one network group, no address", sw.Status, sw.Raw)
	}
	g := groups[0].(map[string]any)
	if nodetest.Str(g, "dimension") != "network" || g["size"] != float64(3) || g["score"] != float64(3) {
		t.Fatalf("group %v, want the network, 3 claims, score 3", g)
	}
	csv := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/ring/sweep?format=csv", admin, nil)
	if csv.Status != http.StatusOK || strings.Count(string(csv.Raw), "\n") != 4 || !strings.HasPrefix(string(csv.Raw), "rank,dimension,hash") {
		t.Errorf("sweep CSV: %d %q, want a header and 3 rows", csv.Status, csv.Raw)
	}
	cancelURL := n.URL() + "/admin/events/ring/cancellations"
	group := `"group":{"dimension":"network","hash":"` + nodetest.Str(g, "hash") + `"}`
	for name, body := range map[string]string{
		"no restock":          `{` + group + `,"reason":"ring"}`,
		"claims and a group":  `{` + group + `,"claim_ids":["` + ids["r1"] + `"],"reason":"ring","restock":true}`,
		"no reason":           `{` + group + `,"restock":true}`,
		"unknown dimension":   `{"group":{"dimension":"shoe","hash":"00"},"reason":"ring","restock":true}`,
		"unknown field":       `{` + group + `,"reason":"ring","restock":true,"force":true}`,
		"control in a reason": `{` + group + `,"reason":"a\u0000b","restock":true}`,
	} {
		if a := nodetest.Call(t, http.MethodPost, cancelURL, admin, []byte(body)); a.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, a.Status, a.Raw)
		}
	}
	a := nodetest.Call(t, http.MethodPost, cancelURL, admin, []byte(`{`+group+`,"reason":"ring: one network","restock":true}`))
	if cancelled, _ := a.Body["cancelled"].([]any); a.Status != http.StatusOK || len(cancelled) != 3 {
		t.Fatalf("cancel the group: %d %s, want 3 cancelled", a.Status, a.Raw)
	}
	for u, id := range ids {
		if got := nodetest.Str(nodetest.Call(t, http.MethodGet, ev+"/claims/"+id, map[string]string{"X-User-ID": u}, nil).Body, "status"); got != "cancelled" {
			t.Errorf("%s's claim reads %q, want cancelled", u, got)
		}
	}
	again := nodetest.Call(t, http.MethodPost, cancelURL, admin, []byte(`{"claim_ids":["`+ids["r1"]+`"],"reason":"again","restock":true}`))
	if again.Status != http.StatusConflict || nodetest.Str(again.Body, "code") != "not_cancellable" {
		t.Errorf("cancelling again: %d %s, want 409 not_cancellable", again.Status, again.Raw)
	}
	view := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/ring", admin, nil)
	if !strings.Contains(string(view.Raw), `"restocked":3`) {
		t.Errorf("admin view after the cancellation: %s, want 3 restocked", view.Raw)
	}
	if sw := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/ring/sweep", admin, nil); !strings.Contains(string(sw.Raw), `"groups":[]`) {
		t.Errorf("sweep after cancelling: %s, want no group", sw.Raw)
	}
}
