package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestDoorChangeAuditedWithBefore: a save that changes a door rule's
// expression is audited with the rule as it was before and as it is
// after (the save decodes into a copy of the stored configuration, whose
// slices must not be shared with the one the audit compares against).
func TestDoorChangeAuditedWithBefore(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode)
	admin := bearerOf(n.AdminToken)
	s := sale{supply: 10, rate: 10}
	url := n.URL() + "/admin/events/gala"
	a := nodetest.Call(t, http.MethodPut, url, admin, withRules(t, s,
		map[string]string{"name": "health", "when": `request.path == "/healthz"`, "then": "bypass"},
		map[string]string{"name": "bots", "when": `request.headers["user-agent"] == "bot"`, "then": "sink"}))
	if a.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.Status, a.Raw)
	}
	last := newestAudit(t, n, admin)
	a = nodetest.Call(t, http.MethodPut, url, admin, []byte(`{"door":{"rules":[
		{"name":"health","when":"request.path == \"/livez\"","then":"bypass"},
		{"name":"bots","when":"request.headers[\"user-agent\"] == \"bot\"","then":"block"}]}}`))
	if a.Status != http.StatusOK {
		t.Fatalf("update: %d %s", a.Status, a.Raw)
	}
	es := auditSince(t, n, admin, last)
	if len(es) != 1 || nodetest.Str(es[0], "action") != "event.update" {
		t.Fatalf("audit after the door change: %v, want one event.update", es)
	}
	before, after := mustJSON(t, es[0]["before"]), mustJSON(t, es[0]["after"])
	if !strings.Contains(before, `/healthz`) || !strings.Contains(before, `sink`) || !strings.Contains(after, `/livez`) || !strings.Contains(after, `block`) {
		t.Errorf("audit before %s after %s: want the old rules before and the new after", before, after)
	}
}
