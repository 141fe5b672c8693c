package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/web"
)

// notStaff are the state-changing routes that take no staff credentials,
// each with why: a shopper's or the shop's own action, not staff's.
var notStaff = map[string]string{
	"POST /events/:id/join":                   "a shopper joins",
	"POST /events/:id/claim":                  "a shopper claims",
	"POST /events/:id/push":                   "a shopper subscribes to Web Push",
	"POST /events/:id/attest/apple":           "a shopper's app registers its App Attest key",
	"POST /events/:id/health":                 "the shop reports its health, signed by the shop",
	"POST /events/:id/sessions/:jti/finished": "the shop reports a checkout finished, signed by the shop",
	"POST /e/:id/basic/join":                  "a shopper joins without JavaScript",
	"POST /e/:id/basic/claim":                 "a shopper claims without JavaScript",
}

// readOnly are the staff routes that take a POST but change nothing,
// each with why: nothing to audit.
var readOnly = map[string]string{
	"POST /events/:id/attest/challenge": "issues a challenge signed by the node: writes nothing (attest/device)",
	"POST /admin/events/:id/door/test":  "evaluates the door rules for a described request: saves nothing (TestDoorRulesTester)",
}

// auditedCall is one state-changing staff route: how the test calls it,
// as whom, and the audit entry it must leave.
type auditedCall struct {
	route string // method and template, as in the routes table
	path  func() string
	who   func() map[string]string
	body  string
	// bodyOf, when set, makes the body at the call (it names what an
	// earlier step made).
	bodyOf func() string
	status int
	action string // the audit entry's action
	by     string // the audit entry's who
}

// TestEveryStaffChangeAudited walks the routes table: every route that can
// change state (not GET or HEAD) is either a staff action, called here
// and required to leave its audit entry (who and what), or listed in
// notStaff with the reason it is not one. A new state-changing route
// fails this test until it is one or the other (issue 34: an operator's
// release of a shopper's claim left no entry).
func TestEveryStaffChangeAudited(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode)
	token := bearerOf(n.AdminToken)
	var admin, operator, olga map[string]string
	var keyPrefix, passID, claimID, cancelID string
	calls := []auditedCall{
		{route: "POST /admin/accounts", path: func() string { return "/admin/accounts" }, who: func() map[string]string { return token },
			body: `{"name":"ada","role":"admin","password":"password of ada"}`, status: 201, action: "account.create", by: "admin-token"},
		{route: "POST /admin/session", path: func() string { return "/admin/session" }, who: func() map[string]string { return map[string]string{"Content-Type": "application/json"} },
			body: `{"name":"ada","password":"password of ada"}`, status: 200, action: "session.sign_in", by: "ada"},
		{route: "PUT /admin/events/:id/", path: func() string { return "/admin/events/gala" }, who: func() map[string]string { return admin },
			body: mustJSON(t, sale{supply: 10, opensIn: -2 * time.Second, startsIn: -time.Second, rate: 1000}), status: 201, action: "event.create", by: "ada"},
		{route: "POST /admin/events/:id/pause", path: func() string { return "/admin/events/gala/pause" }, who: func() map[string]string { return operator }, status: 200, action: "event.pause", by: "olga"},
		{route: "POST /admin/events/:id/resume", path: func() string { return "/admin/events/gala/resume" }, who: func() map[string]string { return operator }, status: 200, action: "event.resume", by: "olga"},
		{route: "POST /admin/events/:id/close", path: func() string { return "/admin/events/gala/close" }, who: func() map[string]string { return operator }, status: 200, action: "event.close", by: "olga"},
		{route: "POST /admin/events/:id/reopen", path: func() string { return "/admin/events/gala/reopen" }, who: func() map[string]string { return operator }, status: 200, action: "event.reopen", by: "olga"},
		{route: "PUT /admin/events/:id/fail-open", path: func() string { return "/admin/events/gala/fail-open" }, who: func() map[string]string { return operator },
			body: `{"until":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `","confirm":"gala"}`, status: 200, action: "event.fail_open", by: "olga"},
		{route: "DELETE /admin/events/:id/fail-open", path: func() string { return "/admin/events/gala/fail-open" }, who: func() map[string]string { return operator }, status: 200, action: "event.fail_open_end", by: "olga"},
		{route: "POST /admin/events/:id/rebuild", path: func() string { return "/admin/events/gala/rebuild" }, who: func() map[string]string { return operator }, status: 200, action: "event.rebuild", by: "olga"},
		{route: "POST /admin/events/:id/passes", path: func() string { return "/admin/events/gala/passes" }, who: func() map[string]string { return operator },
			body: `{"uses":1}`, status: 201, action: "pass.mint", by: "olga"},
		{route: "DELETE /admin/events/:id/passes/:pass", path: func() string { return "/admin/events/gala/passes/" + passID }, who: func() map[string]string { return operator }, status: 200, action: "pass.revoke", by: "olga"},
		{route: "PUT /admin/lists/:name", path: func() string { return "/admin/lists/resellers" }, who: func() map[string]string { return admin },
			body: `{"kind":"user"}`, status: 201, action: "list.create", by: "ada"},
		{route: "POST /admin/lists/:name/entries", path: func() string { return "/admin/lists/resellers/entries?mode=append" }, who: func() map[string]string { return withHeader(operator, "Content-Type", "text/csv") },
			body: "u1\nu2\n", status: 200, action: "list.load", by: "olga"},
		{route: "PUT /admin/lists/:name/entries/:value", path: func() string { return "/admin/lists/resellers/entries/u3" }, who: func() map[string]string { return operator }, status: 200, action: "list.add", by: "olga"},
		{route: "DELETE /admin/lists/:name/entries/:value", path: func() string { return "/admin/lists/resellers/entries/u1" }, who: func() map[string]string { return operator }, status: 200, action: "list.remove", by: "olga"},
		{route: "DELETE /admin/lists/:name", path: func() string { return "/admin/lists/resellers" }, who: func() map[string]string { return admin }, status: 204, action: "list.delete", by: "ada"},
		{route: "PUT /admin/events/:id/page", path: func() string { return "/admin/events/gala/page" }, who: func() map[string]string { return admin },
			body: `{"name": "Gala"}`, status: 200, action: "page.draft", by: "ada"},
		{route: "POST /admin/events/:id/page/publish", path: func() string { return "/admin/events/gala/page/publish" }, who: func() map[string]string { return admin }, status: 200, action: "page.publish", by: "ada"},
		{route: "POST /events/:id/claims/:claim_id/release", path: func() string { return "/events/gala/claims/" + claimID + "/release" }, who: func() map[string]string { return operator }, status: 200, action: "claim.release", by: "olga"},
		{route: "POST /admin/events/:id/cancellations", path: func() string { return "/admin/events/gala/cancellations" }, who: func() map[string]string { return operator },
			bodyOf: func() string { return `{"claim_ids":["` + cancelID + `"],"reason":"ring","restock":true}` }, status: 200, action: "claim.cancel", by: "olga"},
		{route: "POST /admin/accounts/:name/keys", path: func() string { return "/admin/accounts/olga/keys" }, who: func() map[string]string { return admin }, status: 201, action: "apikey.create", by: "ada"},
		{route: "DELETE /admin/keys/:prefix", path: func() string { return "/admin/keys/" + keyPrefix }, who: func() map[string]string { return admin }, status: 204, action: "apikey.revoke", by: "ada"},
		{route: "POST /admin/session/password", path: func() string { return "/admin/session/password" }, who: func() map[string]string { return olga },
			body: `{"old_password":"password of olga","new_password":"olga's new password"}`, status: 200, action: "account.password", by: "olga"},
		{route: "PUT /admin/accounts/:name/password", path: func() string { return "/admin/accounts/olga/password" }, who: func() map[string]string { return admin },
			body: `{"password":"reset by ada, long"}`, status: 204, action: "account.password_reset", by: "ada"},
		{route: "PUT /admin/accounts/:name", path: func() string { return "/admin/accounts/olga" }, who: func() map[string]string { return admin },
			body: `{"role":"viewer"}`, status: 200, action: "account.role", by: "ada"},
		{route: "DELETE /admin/accounts/:name", path: func() string { return "/admin/accounts/olga" }, who: func() map[string]string { return admin }, status: 204, action: "account.delete", by: "ada"},
		{route: "DELETE /admin/session", path: func() string { return "/admin/session" }, who: func() map[string]string { return operatorSession(t, n, admin) }, status: 204, action: "session.sign_out", by: "vic"},
		{route: "DELETE /admin/sessions", path: func() string { return "/admin/sessions" }, who: func() map[string]string { return admin }, status: 204, action: "sessions.end_all", by: "ada"},
	}

	// Every state-changing route of the table is called here or excused.
	app, err := web.New(web.Config{AdminToken: "only-to-list-the-routes-0123456789"}, web.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, c := range calls {
		covered[c.route] = true
	}
	seen := map[string]bool{}
	for _, r := range app.GetRoutes(true) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			continue
		}
		route := r.Method + " " + r.Path
		seen[route] = true
		if _, ok := notStaff[route]; !ok && !covered[route] && readOnly[route] == "" {
			t.Errorf("%s changes state and no test asserts its audit entry: add it to TestEveryStaffChangeAudited (or to notStaff, with why it is not a staff action, or to readOnly, with why it changes nothing)", route)
		}
	}
	for route := range covered {
		if !seen[route] {
			t.Errorf("%s is not in the routes table any more: remove its row", route)
		}
	}
	for route := range notStaff {
		if !seen[route] {
			t.Errorf("%s is not in the routes table any more: remove it from notStaff", route)
		}
	}
	for route := range readOnly {
		if !seen[route] {
			t.Errorf("%s is not in the routes table any more: remove it from readOnly", route)
		}
	}

	for _, c := range calls {
		switch c.route {
		case "PUT /admin/events/:id/":
			createAccount(t, n, admin, "olga", "operator")
			operator = staffSignIn(t, n, "olga", "password of olga")
		case "POST /events/:id/claims/:claim_id/release":
			claimID = claimOne(t, n, "gala", "shopper-1")
		case "POST /admin/events/:id/cancellations":
			cancelID = claimOne(t, n, "gala", "shopper-2")
		case "POST /admin/session/password":
			olga = staffSignIn(t, n, "olga", "password of olga")
		}
		last := newestAudit(t, n, admin)
		body := c.body
		if c.bodyOf != nil {
			body = c.bodyOf()
		}
		a := nodetest.Call(t, strings.Fields(c.route)[0], n.URL()+c.path(), c.who(), []byte(body))
		if a.Status != c.status {
			t.Errorf("%s: %d %s, want %d", c.route, a.Status, a.Raw, c.status)
			continue
		}
		switch c.route {
		case "POST /admin/accounts", "DELETE /admin/sessions":
			admin = staffSignIn(t, n, "ada", "password of ada")
		case "POST /admin/events/:id/passes":
			passID = nodetest.Str(a.Body["record"].(map[string]any), "id")
		case "POST /admin/accounts/:name/keys":
			keyPrefix = nodetest.Str(a.Body, "prefix")
		}
		found := false
		for _, e := range auditSince(t, n, admin, last) {
			if e["action"] == c.action && e["who"] == c.by {
				found = true
			}
		}
		if !found {
			t.Errorf("%s by %s: no audit entry %q", c.route, c.by, c.action)
		}
	}
}

// withHeader is hdr with k set to v, hdr unchanged.
func withHeader(hdr map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range hdr {
		out[hk] = hv
	}
	return out
}

// mustJSON is v as JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// operatorSession creates vic and returns her signed-in session.
func operatorSession(t *testing.T, n *node.Node, admin map[string]string) map[string]string {
	t.Helper()
	createAccount(t, n, admin, "vic", "operator")
	return staffSignIn(t, n, "vic", "password of vic")
}

// claimOne admits user to ev and claims one unit; it returns the claim id.
func claimOne(t *testing.T, n *node.Node, ev, user string) string {
	t.Helper()
	token := nodetest.AdmitUser(t, n, ev, user)
	a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/claim", map[string]string{"X-User-ID": user, "Authorization": "Bearer " + token, "Idempotency-Key": "one"}, nil)
	if a.Status != http.StatusCreated {
		t.Fatalf("claim: %d %s", a.Status, a.Raw)
	}
	return nodetest.Str(a.Body, "claim_id")
}

// newestAudit returns the id of the newest audit entry ("" for none).
func newestAudit(t *testing.T, n *node.Node, admin map[string]string) string {
	t.Helper()
	if admin == nil {
		return ""
	}
	es := auditSince(t, n, admin, "")
	if len(es) == 0 {
		return ""
	}
	return nodetest.Str(es[0], "id")
}

// auditSince returns the audit entries newer than id, newest first, read
// with the admin token (the bootstrap may not, once an admin exists: then
// with admin).
func auditSince(t *testing.T, n *node.Node, admin map[string]string, id string) []map[string]any {
	t.Helper()
	hdr := admin
	if hdr == nil {
		hdr = bearerOf(n.AdminToken)
	}
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit", hdr, nil)
	if a.Status != http.StatusOK {
		t.Fatalf("audit: %d %s", a.Status, a.Raw)
	}
	var out []map[string]any
	for _, e := range a.Body["entries"].([]any) {
		m := e.(map[string]any)
		if m["id"] == id {
			break
		}
		out = append(out, m)
	}
	return out
}
