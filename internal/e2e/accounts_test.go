package e2e

import (
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
)

// staffSignIn signs an account in over HTTP and returns the headers of its
// session (cookie and CSRF token).
func staffSignIn(t *testing.T, n *node.Node, name, password string) map[string]string {
	t.Helper()
	in := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/session", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"name":"`+name+`","password":"`+password+`"}`))
	if in.Status != http.StatusOK {
		t.Fatalf("sign in %s: %d %s", name, in.Status, in.Raw)
	}
	cookie := strings.SplitN(in.Header.Get("Set-Cookie"), ";", 2)[0]
	return map[string]string{"Cookie": cookie, "X-CSRF-Token": nodetest.Str(in.Body, "csrf_token"), "Content-Type": "application/json"}
}

func bearerOf(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
}

// createAccount creates a staff account with auth's headers.
func createAccount(t *testing.T, n *node.Node, auth map[string]string, name, role string) {
	t.Helper()
	a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", auth, []byte(`{"name":"`+name+`","role":"`+role+`","password":"password of `+name+`"}`))
	if a.Status != http.StatusCreated {
		t.Fatalf("create account %s: %d %s", name, a.Status, a.Raw)
	}
}

// TestStaffRoles checks each role against each class of admin route
// (403 for a lower role, never 401 once authenticated), API keys, the
// admin token's bootstrap-only rule once an admin exists, and the audit.
func TestStaffRoles(t *testing.T) {
	n := startNode(t)
	nodetest.CreateSale(t, n, "gala", sale{supply: 10, opensIn: -2 * time.Second, startsIn: time.Minute, rate: 20})
	token := bearerOf(n.AdminToken)
	createAccount(t, n, token, "ada", "admin")
	// Now the token only manages accounts.
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/gala/pause", token, nil); a.Status != http.StatusForbidden {
		t.Fatalf("the admin token after the first admin: %d %s", a.Status, a.Raw)
	}
	admin := staffSignIn(t, n, "ada", "password of ada")
	createAccount(t, n, admin, "olga", "operator")
	createAccount(t, n, token, "vic", "viewer") // recovery path still open
	key := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts/olga/keys", admin, nil)
	if key.Status != http.StatusCreated || !strings.HasPrefix(nodetest.Str(key.Body, "key"), "ak_") {
		t.Fatalf("new key: %d %s", key.Status, key.Raw)
	}
	who := map[string]map[string]string{
		"viewer":        staffSignIn(t, n, "vic", "password of vic"),
		"operator":      staffSignIn(t, n, "olga", "password of olga"),
		"operator key":  bearerOf(nodetest.Str(key.Body, "key")),
		"admin":         admin,
		"bootstrap tok": token,
	}
	rank := map[string]int{"viewer": 1, "operator": 2, "operator key": 2, "admin": 3, "bootstrap tok": 0}
	routes := []struct {
		method, path string
		body         string
		need         int
		ok           int
	}{
		{http.MethodGet, "/admin/events", "", 1, 200},
		{http.MethodGet, "/admin/events/gala", "", 1, 200},
		{http.MethodGet, "/admin/audit", "", 1, 200},
		{http.MethodGet, "/admin/audit.csv", "", 1, 200},
		{http.MethodPost, "/admin/events/gala/pause", "", 2, 200},
		{http.MethodPost, "/admin/events/gala/resume", "", 2, 200},
		{http.MethodPut, "/admin/events/gala", `{"admit_rate_per_second": 9}`, 2, 200},
		{http.MethodGet, "/admin/events/gala/page", "", 1, 200},
		{http.MethodGet, "/admin/events/gala/preview?state=paused&lang=hi", "", 1, 200},
		{http.MethodPut, "/admin/events/gala/page", `{"name": "Gala"}`, 2, 200},
		{http.MethodPost, "/admin/events/gala/page/publish", "", 2, 200},
		{http.MethodPost, "/admin/accounts/vic/keys", "", 3, 201},
	}
	for _, r := range routes {
		for _, name := range []string{"viewer", "operator", "operator key", "admin", "bootstrap tok"} { // in this order: olga pauses first
			a := nodetest.Call(t, r.method, n.URL()+r.path, who[name], []byte(r.body))
			want := r.ok
			if rank[name] < r.need {
				want = http.StatusForbidden
			}
			if a.Status != want {
				t.Errorf("%s %s as %s: %d %s, want %d", r.method, r.path, name, a.Status, a.Raw, want)
			}
		}
	}
	// Only admins (or the bootstrap token) see accounts.
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/accounts", who["operator"], nil); a.Status != http.StatusForbidden {
		t.Errorf("operator lists accounts: %d", a.Status)
	}
	// A wrong password or key is 401; a revoked key stops at once.
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/session", map[string]string{"Content-Type": "application/json"}, []byte(`{"name":"olga","password":"not her password"}`)); a.Status != http.StatusUnauthorized {
		t.Errorf("wrong password: %d", a.Status)
	}
	if a := nodetest.Call(t, http.MethodDelete, n.URL()+"/admin/keys/"+nodetest.Str(key.Body, "prefix"), admin, nil); a.Status != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events", who["operator key"], nil); a.Status != http.StatusUnauthorized {
		t.Errorf("revoked key: %d", a.Status)
	}
	// Deleting an account ends its sessions on the spot.
	if a := nodetest.Call(t, http.MethodDelete, n.URL()+"/admin/accounts/vic", admin, nil); a.Status != http.StatusNoContent {
		t.Fatalf("delete vic: %d %s", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events", who["viewer"], nil); a.Status != http.StatusUnauthorized {
		t.Errorf("deleted account's session: %d", a.Status)
	}

	// The audit names who did what, with before and after, and no secrets.
	au := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit?event=gala", admin, nil)
	entries, _ := au.Body["entries"].([]any)
	var pause, update map[string]any
	for _, e := range entries {
		m := e.(map[string]any)
		switch {
		case m["action"] == "event.pause" && m["who"] == "olga" && m["before"].(map[string]any)["paused"] == false:
			pause = m
		case m["action"] == "event.update" && m["who"] == "olga":
			update = m // newest first: the last is olga's first update, the one that changed the rate
		}
	}
	if pause == nil || pause["role"] != "operator" || pause["before"].(map[string]any)["paused"] != false || pause["after"].(map[string]any)["paused"] != true {
		t.Errorf("pause entry %v in %s", pause, au.Raw)
	}
	if update == nil || update["role"] != "operator" || update["after"].(map[string]any)["admit_rate_per_second"] != 9.0 || update["before"].(map[string]any)["admit_rate_per_second"] != 20.0 {
		t.Errorf("update entry %v in %s", update, au.Raw)
	}
	all := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit.csv", admin, nil)
	rows, err := csv.NewReader(strings.NewReader(string(all.Raw))).ReadAll()
	if err != nil || len(rows) < 8 || rows[0][3] != "action" {
		t.Fatalf("csv: %v %q", err, all.Raw)
	}
	for _, secret := range []string{"password of", nodetest.Str(key.Body, "key"), n.AdminToken} {
		if strings.Contains(string(all.Raw), secret) {
			t.Errorf("the audit export holds a secret %q", secret)
		}
	}
	for _, act := range []string{"account.create", "apikey.create", "apikey.revoke", "account.delete", "event.create", "event.resume"} {
		if !strings.Contains(string(all.Raw), ","+act+",") {
			t.Errorf("the audit lacks %s", act)
		}
	}
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit?since=yesterday", admin, nil); a.Status != http.StatusBadRequest {
		t.Errorf("bad since: %d", a.Status)
	}

	// A role change ends the account's sessions, and holds on the next
	// sign-in; the last admin stays.
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/accounts/olga", admin, []byte(`{"role":"viewer"}`)); a.Status != http.StatusOK || nodetest.Str(a.Body, "role") != "viewer" {
		t.Fatalf("demote olga: %d %s", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/gala/pause", who["operator"], nil); a.Status != http.StatusUnauthorized {
		t.Errorf("demoted olga's session pauses: %d, want 401 (a role change ends the sessions)", a.Status)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/gala/pause", staffSignIn(t, n, "olga", "password of olga"), nil); a.Status != http.StatusForbidden {
		t.Errorf("demoted olga pauses: %d", a.Status)
	}
	for _, r := range []struct{ method, body string }{{http.MethodDelete, ""}, {http.MethodPut, `{"role":"operator"}`}} {
		if a := nodetest.Call(t, r.method, n.URL()+"/admin/accounts/ada", admin, []byte(r.body)); a.Status != http.StatusConflict {
			t.Errorf("%s the last admin: %d %s", r.method, a.Status, a.Raw)
		}
	}
	for _, bad := range []string{`{"name":"Bad Name","role":"viewer","password":"long enough password"}`, `{"name":"x","role":"root","password":"long enough password"}`, `{"name":"x","role":"viewer","password":"short"}`, `{"name":"x"`, `{"name":"x","role":"viewer","password":"long enough password","extra":1}`} {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", admin, []byte(bad)); a.Status != http.StatusBadRequest {
			t.Errorf("create %s: %d %s", bad, a.Status, a.Raw)
		}
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", admin, []byte(`{"name":"olga","role":"viewer","password":"long enough password"}`)); a.Status != http.StatusConflict {
		t.Errorf("create olga again: %d", a.Status)
	}

	// Wrong passwords and API keys share the per-address throttle (last:
	// it blocks this address). Two failures so far: a wrong password and
	// the revoked key; three more block.
	for i := range 3 {
		var a nodetest.Answer
		if i == 1 {
			a = nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events", bearerOf("ak_0123456789ab_guess"), nil)
		} else {
			a = nodetest.Call(t, http.MethodPost, n.URL()+"/admin/session", map[string]string{"Content-Type": "application/json"}, []byte(`{"name":"ada","password":"guess number `+string(rune('a'+i))+`"}`))
		}
		if a.Status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d %s", i, a.Status, a.Raw)
		}
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/session", map[string]string{"Content-Type": "application/json"}, []byte(`{"name":"ada","password":"password of ada"}`)); a.Status != http.StatusTooManyRequests || a.Header.Get("Retry-After") == "" {
		t.Errorf("after 5 guesses, the right password: %d %s", a.Status, a.Raw)
	}
}
