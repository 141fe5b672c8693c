package e2e

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestDoorTesterLists: the door's tester decides as the gate does, with
// the sale's lists: a caller on a block list (by user id or network) is
// blocked whatever the rules say; one on none of the eligibility lists is
// not_eligible unless a rule bypasses the queue; rules tried from the
// body meet the saved lists.
func TestDoorTesterLists(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode)
	admin := bearerOf(n.AdminToken)
	call := func(method, path, body string, want int) {
		t.Helper()
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		if a := nodetest.Call(t, method, n.URL()+path, admin, b); a.Status != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, a.Status, a.Raw, want)
		}
	}
	call(http.MethodPut, "/admin/lists/vip", `{"kind":"user"}`, http.StatusCreated)
	call(http.MethodPut, "/admin/lists/vip/entries/u1", "", http.StatusOK)
	call(http.MethodPut, "/admin/lists/bad-net", `{"kind":"network"}`, http.StatusCreated)
	call(http.MethodPut, "/admin/lists/bad-net/entries/203.0.113.0%2F24", "", http.StatusOK)
	call(http.MethodPut, "/admin/lists/resellers", `{"kind":"user"}`, http.StatusCreated)
	call(http.MethodPut, "/admin/lists/resellers/entries/u9", "", http.StatusOK)
	s := withRules(t, sale{supply: 10, rate: 10}, map[string]string{"name": "health", "when": `request.path == "/healthz"`, "then": "bypass"})
	var m map[string]any
	if err := json.Unmarshal(s, &m); err != nil {
		t.Fatal(err)
	}
	m["door"].(map[string]any)["block_lists"] = []string{"bad-net", "resellers"}
	m["door"].(map[string]any)["eligible_lists"] = []string{"vip"}
	call(http.MethodPut, "/admin/events/gala", mustJSON(t, m), http.StatusCreated)

	url := n.URL() + "/admin/events/gala/door/test"
	try := func(body string) (any, any) {
		a := nodetest.Call(t, http.MethodPost, url, admin, []byte(body))
		if a.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", body, a.Status, a.Raw)
		}
		return a.Body["then"], a.Body["rule"]
	}
	// The node's view of the lists catches up within a tick.
	nodetest.WaitFor(t, "the node's view of the lists", 0, func() bool { then, _ := try(`{"user":"u1"}`); return then == "queue" })
	for _, c := range []struct {
		body, then string
		rule       any
	}{
		{`{"user":"u1"}`, "queue", nil},
		{`{"user":"u2"}`, "not_eligible", nil},
		{`{}`, "not_eligible", nil},
		{`{"user":"u1","ip":"203.0.113.9"}`, "block", nil},
		{`{"user":"u1","ip":"::ffff:203.0.113.9"}`, "block", nil},
		{`{"user":"u9"}`, "block", nil},
		{`{"user":"u2","path":"/healthz"}`, "bypass", "health"},
		{`{"user":"u1","ip":"203.0.113.9","path":"/healthz"}`, "block", nil}, // block lists come before the rules
		{`{"user":"u2","rules":[]}`, "not_eligible", nil},                    // rules from the body, the saved lists
		{`{"user":"u1","rules":[{"name":"all","when":"true","then":"sink"}]}`, "sink", "all"},
	} {
		if then, rule := try(c.body); then != c.then || rule != c.rule {
			t.Errorf("%s: then %v rule %v, want %s %v", c.body, then, rule, c.then, c.rule)
		}
	}
}
