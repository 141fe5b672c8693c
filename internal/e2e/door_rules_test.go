package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// withRules is s's admin API object with the door rules.
func withRules(t *testing.T, s sale, rules ...map[string]string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(mustJSON(t, s)), &m); err != nil {
		t.Fatal(err)
	}
	m["door"] = map[string]any{"rules": rules}
	return []byte(mustJSON(t, m))
}

// TestDoorRulesSaved: a save whose door rule does not compile answers 400
// invalid_rule naming the rule and the column, and stores nothing; a good
// one is saved.
func TestDoorRulesSaved(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode)
	admin := bearerOf(n.AdminToken)
	url := n.URL() + "/admin/events/gala"
	good := map[string]string{"name": "health", "when": `request.path == "/healthz"`, "then": "bypass"}
	bad := map[string]string{"name": "ua", "when": `request.headers["user-agent"].contains(`, "then": "sink"}
	s := sale{supply: 10, rate: 10}

	a := nodetest.Call(t, http.MethodPut, url, admin, withRules(t, s, good, bad))
	if a.Status != http.StatusBadRequest || nodetest.Str(a.Body, "code") != "invalid_rule" {
		t.Fatalf("create with a bad rule: %d %s, want 400 invalid_rule", a.Status, a.Raw)
	}
	if d := nodetest.Str(a.Body, "detail"); !strings.Contains(d, `rule "ua"`) || !strings.Contains(d, "column 40") {
		t.Errorf("detail %q names neither the rule nor the column", d)
	}
	if a := nodetest.Call(t, http.MethodGet, url, admin, nil); a.Status != http.StatusNotFound {
		t.Fatalf("after a refused create: %d %s, want 404", a.Status, a.Raw)
	}

	if a := nodetest.Call(t, http.MethodPut, url, admin, withRules(t, s, good)); a.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.Status, a.Raw)
	}
	unknownList := map[string]string{"name": "vip", "when": `in_list("vip", user)`, "then": "bypass"}
	for _, r := range []map[string]string{bad, unknownList} {
		a = nodetest.Call(t, http.MethodPut, url, admin, withRules(t, s, good, r))
		if a.Status != http.StatusBadRequest || nodetest.Str(a.Body, "code") != "invalid_rule" || !strings.Contains(nodetest.Str(a.Body, "detail"), `rule "`+r["name"]+`"`) {
			t.Errorf("update with rule %s: %d %s, want 400 invalid_rule naming it", r["name"], a.Status, a.Raw)
		}
	}
	a = nodetest.Call(t, http.MethodGet, url, admin, nil)
	cfg, _ := a.Body["config"].(map[string]any)
	if v := cfg["version"]; v != float64(1) {
		t.Errorf("version %v after refused updates, want 1", v)
	}
	if got := mustJSON(t, cfg["door"]); !strings.Contains(got, `"health"`) || strings.Contains(got, `"ua"`) {
		t.Errorf("door after refused updates: %s", got)
	}
}

// TestDoorRulesTester: POST /admin/events/{id}/door/test tells what the
// saved rules, or rules of the body, decide for a described request, to a
// viewer, and changes nothing.
func TestDoorRulesTester(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode)
	admin := bearerOf(n.AdminToken)
	s := sale{supply: 10, rate: 10}
	rules := []map[string]string{
		{"name": "health", "when": `request.path == "/healthz"`, "then": "bypass"},
		{"name": "bad-net", "when": `in_network(request.ip, "2001:db8::/32")`, "then": "block"},
		{"name": "curl", "when": `request.headers["user-agent"].startsWith("curl/") && request.cookies["sid"] == ""`, "then": "sink"},
		{"name": "staff", "when": `"staff" in claims["roles"] && user != ""`, "then": "bypass"},
		{"name": "debug", "when": `request.params["debug"] == "1" && request.method == "POST"`, "then": "challenge"},
		{"name": "carrier-nat", "when": `busy_network() && request.method == "POST"`, "then": "challenge"},
	}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/gala", admin, withRules(t, s, rules...)); a.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.Status, a.Raw)
	}
	createAccount(t, n, admin, "vera", "viewer")
	viewer := staffSignIn(t, n, "vera", "password of vera")
	last := newestAudit(t, n, admin)
	url := n.URL() + "/admin/events/gala/door/test"
	for _, c := range []struct {
		body, then string
		rule       any
	}{
		{`{"path":"/healthz"}`, "bypass", "health"},
		{`{"path":"/","ip":"2001:db8::7"}`, "block", "bad-net"},
		{`{"path":"/","ip":"192.0.2.7"}`, "queue", nil},
		{`{"path":"/","headers":{"User-Agent":"curl/8.5"}}`, "sink", "curl"},
		{`{"path":"/","headers":{"User-Agent":"curl/8.5"},"cookies":{"sid":"x"}}`, "queue", nil},
		{`{"path":"/","user":"ann","claims":{"roles":["staff"]}}`, "bypass", "staff"},
		{`{"method":"post","path":"/","query":"?debug=1"}`, "challenge", "debug"},
		{`{"method":"post","path":"/events/gala/join"}`, "queue", nil},
		{`{"method":"post","path":"/events/gala/join","busy":true}`, "challenge", "carrier-nat"},
		// Rules not saved yet.
		{`{"path":"/healthz","rules":[{"name":"all","when":"true","then":"sink"}]}`, "sink", "all"},
		{`{"path":"/healthz","rules":[]}`, "queue", nil},
	} {
		a := nodetest.Call(t, http.MethodPost, url, viewer, []byte(c.body))
		if a.Status != http.StatusOK || a.Body["then"] != c.then || a.Body["rule"] != c.rule {
			t.Errorf("%s: %d %s, want then %s rule %v", c.body, a.Status, a.Raw, c.then, c.rule)
		}
	}
	for _, c := range []struct{ body, code string }{
		{`{"rules":[{"name":"x","when":"request.path ==","then":"sink"}]}`, "invalid_rule"},
		{`{"rules":[{"name":"Bad Name","when":"true","then":"sink"}]}`, "bad_request"},
		{`{"ip":"not-an-ip"}`, "bad_request"},
		{`{"pth":"/"}`, "bad_request"},
		{`{"busy":"yes"}`, "bad_request"},
		{`{"rules":[{"name":"nat","when":"busy_network()","then":"sink"}]}`, "invalid_rule"},
		{`[`, "bad_request"},
	} {
		a := nodetest.Call(t, http.MethodPost, url, viewer, []byte(c.body))
		if a.Status != http.StatusBadRequest || nodetest.Str(a.Body, "code") != c.code {
			t.Errorf("%s: %d %s, want 400 %s", c.body, a.Status, a.Raw, c.code)
		}
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/nope/door/test", viewer, []byte(`{}`)); a.Status != http.StatusNotFound {
		t.Errorf("unknown event: %d %s", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodPost, url, map[string]string{"Content-Type": "application/json"}, []byte(`{}`)); a.Status != http.StatusUnauthorized {
		t.Errorf("no credentials: %d %s", a.Status, a.Raw)
	}
	// Nothing changed: the saved rules, the version, the audit trail.
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/gala", admin, nil)
	cfg, _ := a.Body["config"].(map[string]any)
	if cfg["version"] != float64(1) || !strings.Contains(mustJSON(t, cfg["door"]), `"carrier-nat"`) {
		t.Errorf("after the tests: version %v door %s", cfg["version"], mustJSON(t, cfg["door"]))
	}
	for _, e := range auditSince(t, n, admin, last) {
		if strings.Contains(nodetest.Str(e, "action"), "door") || strings.Contains(nodetest.Str(e, "action"), "event.") {
			t.Errorf("the tester left an audit entry: %v", e)
		}
	}
}
