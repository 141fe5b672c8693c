package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
)

// sessionStatus is GET /admin/session with a session's headers.
func sessionStatus(t *testing.T, n *node.Node, who map[string]string) int {
	t.Helper()
	return nodetest.Call(t, http.MethodGet, n.URL()+"/admin/session", who, nil).Status
}

// TestSessionsDieWithTheAccount (issue 34): a session belongs to one
// incarnation of an account, not to its name. Deleting olga and creating
// olga again does not bring her old cookie back; a password change ends
// the account's other sessions and keeps the current one; an admin's
// password reset and a role change end them all, API keys too; sign-ins
// and failed sign-ins are audited.
func TestSessionsDieWithTheAccount(t *testing.T) {
	n := startNode(t)
	token := bearerOf(n.AdminToken)
	createAccount(t, n, token, "ada", "admin")
	admin := staffSignIn(t, n, "ada", "password of ada")
	createAccount(t, n, admin, "olga", "viewer")
	stolen := staffSignIn(t, n, "olga", "password of olga")

	// Delete olga, create olga again (an admin now, another password).
	if a := nodetest.Call(t, http.MethodDelete, n.URL()+"/admin/accounts/olga", admin, nil); a.Status != http.StatusNoContent {
		t.Fatalf("delete olga: %d %s", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", admin, []byte(`{"name":"olga","role":"admin","password":"olga's new password"}`)); a.Status != http.StatusCreated {
		t.Fatalf("create olga again: %d %s", a.Status, a.Raw)
	}
	if got := sessionStatus(t, n, stolen); got != http.StatusUnauthorized {
		t.Fatalf("the deleted olga's cookie after olga was created again: GET /admin/session %d, want 401", got)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", stolen, []byte(`{"name":"mallory","role":"admin","password":"mallory's password"}`)); a.Status != http.StatusUnauthorized {
		t.Fatalf("the deleted olga's cookie creates an account: %d %s", a.Status, a.Raw)
	}

	// A password change ends the account's other sessions, keeps this one.
	first := staffSignIn(t, n, "olga", "olga's new password")
	second := staffSignIn(t, n, "olga", "olga's new password")
	key := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts/olga/keys", admin, nil)
	if key.Status != http.StatusCreated {
		t.Fatalf("new key: %d %s", key.Status, key.Raw)
	}
	olgaKey := bearerOf(nodetest.Str(key.Body, "key"))
	wrong := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/session/password", first, []byte(`{"old_password":"not her password at all","new_password":"olga's third password"}`))
	if wrong.Status != http.StatusForbidden {
		t.Fatalf("password change with a wrong old password: %d %s, want 403", wrong.Status, wrong.Raw)
	}
	for _, bad := range []string{`{"old_password":"olga's new password","new_password":"short"}`, `{"old_password":"olga's new password"}`, `{"old_password":"olga's new password","new_password":"long enough password","x":1}`} {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/session/password", first, []byte(bad)); a.Status != http.StatusBadRequest {
			t.Errorf("password change %s: %d %s, want 400", bad, a.Status, a.Raw)
		}
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/session/password", token, []byte(`{"old_password":"x","new_password":"olga's third password"}`)); a.Status != http.StatusForbidden {
		t.Errorf("password change with the admin token: %d %s, want 403", a.Status, a.Raw)
	}
	changed := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/session/password", first, []byte(`{"old_password":"olga's new password","new_password":"olga's third password"}`))
	if changed.Status != http.StatusOK || nodetest.Str(changed.Body, "account") != "olga" {
		t.Fatalf("password change: %d %s", changed.Status, changed.Raw)
	}
	if c := changed.Header.Get("Set-Cookie"); c != "" {
		first["Cookie"] = strings.SplitN(c, ";", 2)[0]
	}
	if got := sessionStatus(t, n, first); got != http.StatusOK {
		t.Errorf("the session that changed the password: %d, want 200", got)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/none/pause", first, nil); a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden {
		t.Errorf("the session that changed the password makes a change: %d %s", a.Status, a.Raw)
	}
	if got := sessionStatus(t, n, second); got != http.StatusUnauthorized {
		t.Errorf("another session after a password change: %d, want 401", got)
	}
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events", olgaKey, nil); a.Status != http.StatusUnauthorized {
		t.Errorf("the account's API key after a password change: %d, want 401", a.Status)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/session", map[string]string{"Content-Type": "application/json"}, []byte(`{"name":"olga","password":"olga's new password"}`)); a.Status != http.StatusUnauthorized {
		t.Errorf("sign-in with the old password: %d", a.Status)
	}

	// A role change ends the account's sessions and keys.
	third := staffSignIn(t, n, "olga", "olga's third password")
	key = nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts/olga/keys", admin, nil)
	olgaKey = bearerOf(nodetest.Str(key.Body, "key"))
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/accounts/olga", admin, []byte(`{"role":"operator"}`)); a.Status != http.StatusOK || len(a.Body["api_keys"].([]any)) != 0 {
		t.Fatalf("olga to operator: %d %s", a.Status, a.Raw)
	}
	for name, who := range map[string]map[string]string{"first": first, "third": third} {
		if got := sessionStatus(t, n, who); got != http.StatusUnauthorized {
			t.Errorf("session %s after a role change: %d, want 401", name, got)
		}
	}
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events", olgaKey, nil); a.Status != http.StatusUnauthorized {
		t.Errorf("the account's API key after a role change: %d, want 401", a.Status)
	}

	// An admin's reset ends them too; the new password signs in.
	fourth := staffSignIn(t, n, "olga", "olga's third password")
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/accounts/olga/password", fourth, []byte(`{"password":"reset by an admin"}`)); a.Status != http.StatusForbidden {
		t.Errorf("an operator resets a password: %d %s, want 403", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/accounts/olga/password", admin, []byte(`{"password":"reset by an admin"}`)); a.Status != http.StatusNoContent {
		t.Fatalf("reset: %d %s", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/accounts/nobody/password", admin, []byte(`{"password":"reset by an admin"}`)); a.Status != http.StatusNotFound {
		t.Errorf("reset of no account: %d %s, want 404", a.Status, a.Raw)
	}
	if got := sessionStatus(t, n, fourth); got != http.StatusUnauthorized {
		t.Errorf("a session after an admin's reset: %d, want 401", got)
	}
	staffSignIn(t, n, "olga", "reset by an admin")

	// Sign-ins and failed sign-ins are in the audit, never a password.
	au := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit.csv", admin, nil)
	for _, want := range []string{",olga,viewer,session.sign_in,", ",olga,,session.sign_in_failed,", ",olga,admin,account.password_failed,", ",olga,admin,account.password,", ",ada,admin,account.password_reset,"} {
		if !strings.Contains(string(au.Raw), want) {
			t.Errorf("the audit lacks %q:\n%s", want, au.Raw)
		}
	}
	for _, secret := range []string{"password of", "new password", "third password", "reset by an admin", "not her password"} {
		if strings.Contains(string(au.Raw), secret) {
			t.Errorf("the audit holds a password %q", secret)
		}
	}
}
