package node_test

import (
	"net/http"
	"testing"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestDoorGateSeesTheProtectedRequest: at the gate (nginx auth_request,
// the Cloudflare Worker asking it) the door's rules see the request the
// proxy protects, named by X-Original-Method and X-Original-URI, not the
// gate call's own GET /events/{id}/gate: a bypass on a path lets an
// anonymous visitor through, a block on a method or a query parameter
// refuses 403 blocked, and without the headers (or with a method that is
// not one) the rules see the gate call as before. Before the fix the
// rules saw GET /events/gate/gate: the bypass never matched (401).
func TestDoorGateSeesTheProtectedRequest(t *testing.T) {
	n, _, _ := doorNode(t, false, true)
	sale := openSale(10, 1, 0, 0, 1)
	sale["door"] = map[string]any{"rules": []map[string]string{
		{"name": "health", "when": `request.path == "/drop/health"`, "then": "bypass"},
		{"name": "no-delete", "when": `request.method == "DELETE"`, "then": "block"},
		{"name": "bots", "when": `request.params["bot"] == "1"`, "then": "block"},
		{"name": "gate-call", "when": `request.path.endsWith("/gate") && request.query == "self=1"`, "then": "bypass"},
	}}
	nodetest.CreateSale(t, n, "gate", sale)
	gate := n.URL() + "/events/gate/gate"
	for _, c := range []struct {
		name   string
		hdr    map[string]string
		status int
		code   string
	}{
		{"a bypassed path", map[string]string{"X-Original-URI": "/drop/health"}, http.StatusNoContent, ""},
		{"another path", map[string]string{"X-Original-URI": "/drop/item"}, http.StatusUnauthorized, "unauthenticated"},
		{"a blocked method", map[string]string{"X-Original-URI": "/drop/item", "X-Original-Method": "DELETE"}, http.StatusForbidden, "blocked"},
		{"a blocked query", map[string]string{"X-Original-URI": "/drop/item?a=2&bot=1"}, http.StatusForbidden, "blocked"},
		{"not a method", map[string]string{"X-Original-URI": "/drop/item", "X-Original-Method": "delete"}, http.StatusUnauthorized, "unauthenticated"},
		{"not a path", map[string]string{"X-Original-URI": "https://evil.example/drop/health"}, http.StatusUnauthorized, "unauthenticated"},
	} {
		a := nodetest.Call(t, http.MethodGet, gate, c.hdr, nil)
		if a.Status != c.status || c.code != "" && nodetest.Str(a.Body, "code") != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, a.Status, a.Raw, c.status, c.code)
		}
	}
	// Without the headers, the rules see the gate call itself.
	if a := nodetest.Call(t, http.MethodGet, gate+"?self=1", nil, nil); a.Status != http.StatusNoContent {
		t.Errorf("the gate call itself: %d %s, want 204 (its own line)", a.Status, a.Raw)
	}
}
