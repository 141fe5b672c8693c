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
)

// TestFailOpenGate sets a fail-open on a sale's gated pages and on a full
// safety-net room through the admin API and checks what it does: every
// visitor passes the gate (204 with X-Anteroom-Fail-Open, the admitted
// still named) while a claim without an admission is refused as before;
// a closed room stays closed; DELETE ends it at once; and a deadline
// ends it by itself on the node's clock, with no one acting. Every bad
// request (past, too far, no or a wrong confirmation, a PUT of the event
// changing it, a malformed body) is a 400 problem that changes nothing.
func TestFailOpenGate(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "drop", openSale(10, 1, 0, 0, 2))
	nodetest.CreateSale(t, n, "site", safetyNet(1, 60, 100))
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken, "Content-Type": "application/json"}
	gate := func(ev string, hdr map[string]string) nodetest.Answer {
		return nodetest.Call(t, http.MethodGet, n.URL()+"/events/"+ev+"/gate", hdr, nil)
	}
	version := func(ev string) (any, string) {
		g := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+ev, admin, nil)
		cfg := g.Body["config"].(map[string]any)
		until, _ := cfg["fail_open_until"].(string)
		return cfg["version"], until
	}
	failOpen := func(ev string, until time.Time, confirm string) nodetest.Answer {
		body := fmt.Sprintf(`{"until":%q,"confirm":%q}`, until.UTC().Format(time.RFC3339Nano), confirm)
		return nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/"+ev+"/fail-open", admin, []byte(body))
	}

	token := nodetest.AdmitUser(t, n, "drop", "ada")
	if g := gate("drop", nil); g.Status != http.StatusUnauthorized || g.Header.Get("X-Anteroom-Fail-Open") != "" {
		t.Fatalf("gate before: %d %v, want 401 without the fail-open header", g.Status, g.Header)
	}
	// The room holds one: the first visitor fills it, the second waits.
	if g := gate("site", nil); g.Status != http.StatusNoContent {
		t.Fatalf("first room visitor: %d %s", g.Status, g.Raw)
	}
	if g := gate("site", nil); g.Status != http.StatusUnauthorized {
		t.Fatalf("second room visitor: %d %s, want 401 (the room is full)", g.Status, g.Raw)
	}

	v0, _ := version("drop")
	now := time.Now()
	for _, bad := range []struct{ name, body string }{
		{"past", fmt.Sprintf(`{"until":%q,"confirm":"drop"}`, now.Add(-time.Minute).UTC().Format(time.RFC3339))},
		{"now-ish past", fmt.Sprintf(`{"until":%q,"confirm":"drop"}`, now.Add(-time.Second).UTC().Format(time.RFC3339))},
		{"too far", fmt.Sprintf(`{"until":%q,"confirm":"drop"}`, now.Add(25*time.Hour).UTC().Format(time.RFC3339))},
		{"no confirm", fmt.Sprintf(`{"until":%q}`, now.Add(time.Hour).UTC().Format(time.RFC3339))},
		{"wrong confirm", fmt.Sprintf(`{"until":%q,"confirm":"site"}`, now.Add(time.Hour).UTC().Format(time.RFC3339))},
		{"no until", `{"confirm":"drop"}`},
		{"not a time", `{"until":"in an hour","confirm":"drop"}`},
		{"unknown field", fmt.Sprintf(`{"until":%q,"confirm":"drop","all":true}`, now.Add(time.Hour).UTC().Format(time.RFC3339))},
		{"empty", ``},
	} {
		a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/drop/fail-open", admin, []byte(bad.body))
		if a.Status != http.StatusBadRequest || a.Header.Get("Content-Type") != "application/problem+json" || nodetest.Str(a.Body, "code") != "bad_request" {
			t.Errorf("fail-open %s: %d %s %s, want a 400 problem", bad.name, a.Status, a.Header.Get("Content-Type"), a.Raw)
		}
	}
	// A PUT of the whole event cannot set it: no confirmation there.
	put := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/drop", admin,
		[]byte(fmt.Sprintf(`{"fail_open_until":%q}`, now.Add(time.Hour).UTC().Format(time.RFC3339))))
	if put.Status != http.StatusBadRequest || !strings.Contains(nodetest.Str(put.Body, "detail"), "fail-open") {
		t.Errorf("PUT of the event with fail_open_until: %d %s, want a 400 naming the route", put.Status, put.Raw)
	}
	if v, until := version("drop"); v != v0 || until != "" {
		t.Fatalf("after the refused requests: version %v (was %v), fail_open_until %q, want nothing changed", v, v0, until)
	}
	if g := gate("drop", nil); g.Status != http.StatusUnauthorized {
		t.Fatalf("gate after the refused requests: %d, want 401", g.Status)
	}

	// Set for an hour: everyone passes, claims still need an admission.
	hour := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	if a := failOpen("drop", hour, "drop"); a.Status != http.StatusOK {
		t.Fatalf("fail-open: %d %s", a.Status, a.Raw)
	}
	g := gate("drop", map[string]string{"X-Original-URI": "/drop/item"})
	if g.Status != http.StatusNoContent || g.Header.Get("X-Anteroom-Fail-Open") != hour.Format(time.RFC3339) || g.Header.Get("X-Anteroom-User") != "" {
		t.Fatalf("anonymous gate while failing open: %d %v, want 204 with X-Anteroom-Fail-Open %s and no user", g.Status, g.Header, hour.Format(time.RFC3339))
	}
	if g := gate("drop", map[string]string{"Authorization": "Bearer " + token}); g.Status != http.StatusNoContent || g.Header.Get("X-Anteroom-User") != "ada" {
		t.Fatalf("admitted gate while failing open: %d %v, want 204 naming ada", g.Status, g.Header)
	}
	if g := gate("drop", map[string]string{"Authorization": "Bearer forged.token.here"}); g.Status != http.StatusNoContent || g.Header.Get("X-Anteroom-User") != "" {
		t.Fatalf("forged token at the gate while failing open: %d %v, want 204 naming nobody", g.Status, g.Header)
	}
	for _, who := range []map[string]string{
		{"X-User-ID": "bob"}, // joined nothing, holds nothing
		{"X-User-ID": "bob", "Authorization": "Bearer forged.token.here"},
		{"X-User-ID": "bob", "Authorization": "Bearer " + token}, // ada's admission
	} {
		who["Idempotency-Key"] = "k-" + fmt.Sprint(len(who))
		c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/drop/claim", who, nil)
		if c.Status != http.StatusUnauthorized && c.Status != http.StatusForbidden {
			t.Errorf("claim by bob (%v) while failing open: %d %s, want refused (401/403): a fail-open never applies to claims", who, c.Status, c.Raw)
		}
	}
	c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/drop/claim", map[string]string{"X-User-ID": "ada", "Authorization": "Bearer " + token, "Idempotency-Key": "ada-1"}, nil)
	if c.Status != http.StatusCreated {
		t.Errorf("ada's claim with her admission while failing open: %d %s, want 201", c.Status, c.Raw)
	}
	au := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit?event=drop", admin, nil)
	if !strings.Contains(string(au.Raw), `"event.fail_open"`) || !strings.Contains(string(au.Raw), hour.Format(time.RFC3339)) {
		t.Errorf("audit: %s, want an event.fail_open entry with the deadline", au.Raw)
	}

	// The replayed event (as GET shows it) saves: it keeps the deadline.
	if v, until := version("drop"); until != hour.Format(time.RFC3339) {
		t.Fatalf("stored: version %v fail_open_until %q, want %s", v, until, hour.Format(time.RFC3339))
	}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/drop", admin, []byte(fmt.Sprintf(`{"name":"renamed","fail_open_until":%q}`, hour.Format(time.RFC3339)))); a.Status != http.StatusOK {
		t.Errorf("PUT keeping fail_open_until: %d %s, want 200", a.Status, a.Raw)
	}

	// A closed room stays closed.
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/drop/close", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("close: %d %s", a.Status, a.Raw)
	}
	if g := gate("drop", nil); g.Status != http.StatusUnauthorized || g.Header.Get("X-Anteroom-Fail-Open") != "" {
		t.Errorf("gate of a closed room failing open: %d %v, want 401 (closed wins)", g.Status, g.Header)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/drop/reopen", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("reopen: %d %s", a.Status, a.Raw)
	}

	// DELETE ends it at once.
	if a := nodetest.Call(t, http.MethodDelete, n.URL()+"/admin/events/drop/fail-open", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("end fail-open: %d %s", a.Status, a.Raw)
	}
	if g := gate("drop", nil); g.Status != http.StatusUnauthorized || g.Header.Get("X-Anteroom-Fail-Open") != "" {
		t.Fatalf("gate after DELETE: %d %v, want 401", g.Status, g.Header)
	}

	// The full room, failing open for a few seconds: the waiting visitor
	// passes (nothing minted: no cookie), then, at the deadline and with
	// nobody acting, the gate is the room's gate again.
	until := time.Now().Add(3 * time.Second)
	if a := failOpen("site", until, "site"); a.Status != http.StatusOK {
		t.Fatalf("fail-open site: %d %s", a.Status, a.Raw)
	}
	g = gate("site", nil)
	if g.Status != http.StatusNoContent || g.Header.Get("X-Anteroom-Fail-Open") == "" || g.Header.Get("Set-Cookie") != "" {
		t.Fatalf("full room failing open: %d %v, want 204 with the fail-open header and no admission cookie", g.Status, g.Header)
	}
	var closedAt time.Time
	nodetest.WaitFor(t, "the fail-open ends by itself", time.Until(until)+2*time.Second, func() bool {
		if g := gate("site", nil); g.Status == http.StatusUnauthorized {
			closedAt = time.Now()
			return true
		}
		return false
	})
	if closedAt.Before(until.Add(-time.Second)) {
		t.Errorf("the gate closed at %s, before the deadline %s", closedAt.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano))
	}
	if _, u := version("site"); u == "" {
		t.Errorf("the passed deadline was cleared from the store; nobody acted, it should just have passed")
	}
	t.Logf("deadline %s, gate closed again at %s (%s after)", until.Format(time.RFC3339Nano), closedAt.Format(time.RFC3339Nano), closedAt.Sub(until).Round(time.Millisecond))
}

// TestRoomGateRedisDown: a safety-net room whose Redis is down cannot
// admit a newcomer, and its gate says so with 503 degraded (it answered
// 401 before, sending the visitor to a waiting page that could not take
// the join either, and leaving a gateway no failure to fail open on); a
// visitor already admitted still passes, checked offline.
func TestRoomGateRedisDown(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "site", safetyNet(100, 60, 100))
	gate := func(hdr map[string]string) nodetest.Answer {
		return nodetest.Call(t, http.MethodGet, n.URL()+"/events/site/gate", hdr, nil)
	}
	first := gate(nil)
	cookie := ""
	for _, c := range (&http.Response{Header: first.Header}).Cookies() {
		if c.Name == "anteroom_a_site" {
			cookie = c.Name + "=" + c.Value
		}
	}
	if first.Status != http.StatusNoContent || cookie == "" {
		t.Fatalf("first visitor: %d %v, want 204 with the admission cookie", first.Status, first.Header)
	}
	r.Kill(t)
	if g := gate(nil); g.Status != http.StatusServiceUnavailable || nodetest.Str(g.Body, "code") != "degraded" || g.Header.Get("Retry-After") == "" {
		t.Errorf("newcomer with Redis down: %d %s, want 503 degraded with Retry-After", g.Status, g.Raw)
	}
	if g := gate(map[string]string{"Cookie": cookie}); g.Status != http.StatusNoContent || g.Header.Get("X-Anteroom-User") == "" {
		t.Errorf("admitted visitor with Redis down: %d %v, want 204 naming them", g.Status, g.Header)
	}
}
