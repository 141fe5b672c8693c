package e2e

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestConsoleBusyNetwork: the console's Join protection edits
// limits.busy_network, the ceiling of the joins a door rule with
// busy_network() lets past the per-IP budget after a challenge. Its note
// says what the default comes to on this node (ten times the anonymous
// per-IP default) and whether a rule of the sale uses it, following a door
// saved elsewhere. A custom ceiling is stored as typed (the admin API's GET
// shows it, and the friction in force) and shown again after a reload,
// where saving it again changes nothing. A value the server refuses (a
// burst over the maximum, a negative rate: a busy network is never
// unlimited) shows the server's 400 under the fields and changes nothing;
// a blank field is refused in the page without a request. axe-core finds
// no violation in the editor with the error shown.
func TestConsoleBusyNetwork(t *testing.T) {
	n := startNode(t) // anonymous visitors: join.ip defaults to 10 at once, 6 a minute
	browser := startBrowser(t)
	axeSource(t)
	admin := bearerOf(n.AdminToken)
	nodetest.CreateSale(t, n, "nat", sale{supply: 5, name: "Campus drop", opensIn: -2 * time.Second, startsIn: time.Hour, rate: 20})
	view := func() map[string]any {
		t.Helper()
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/nat", admin, nil)
		if a.Status != http.StatusOK {
			t.Fatalf("GET the sale: %d %s", a.Status, a.Raw)
		}
		return a.Body
	}
	busyOf := func(v map[string]any) any {
		return v["config"].(map[string]any)["limits"].(map[string]any)["busy_network"]
	}

	staff := signIn(t, browser, n)
	selectEvent(staff, "nat")
	staff.waitJS("the busy-network note", `document.getElementById("busyNote").textContent.includes("Default on this node")`, 0)
	note := staff.text("busySet")
	for _, want := range []string{"carrier's NAT", "busy_network() and then challenge", "100 joins at once from one address, then 60 a minute", "does nothing until one does"} {
		if !strings.Contains(note, want) {
			t.Errorf("busy-network note of the default, no rule: %q lacks %q", note, want)
		}
	}
	if staff.visible("p-busyr") {
		t.Errorf("the custom ceiling's fields are shown while the choice is the default")
	}

	// A rule saved elsewhere: the note says the sale's door uses it.
	rule := []byte(`{"door": {"rules": [{"name": "carrier-nat", "when": "busy_network()", "then": "challenge"}]}}`)
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/nat", admin, rule); a.Status != http.StatusOK {
		t.Fatalf("save the busy-network rule: %d %s", a.Status, a.Raw)
	}
	staff.waitJS("the note naming the rule", `document.getElementById("busyNote").textContent.includes("rule carrier-nat")`, 0)

	// A custom ceiling: stored as typed, in force, shown after a reload.
	choose(staff, "p-busy", "custom")
	staff.do(chromedp.SendKeys(chromedp.ID("p-busyr"), "90"), chromedp.SendKeys(chromedp.ID("p-busyb"), "40"))
	if got := save(staff); !strings.Contains(got, "Saved nat") || !strings.Contains(got, "limits") {
		t.Fatalf("saving a custom busy-network ceiling: %q", got)
	}
	want := map[string]any{"per_second": 1.5, "burst": 40.0}
	v := view()
	if got := busyOf(v); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored limits.busy_network: %v, want %v", got, want)
	}
	if got := v["friction"].(map[string]any)["busy_network"]; !reflect.DeepEqual(got, want) {
		t.Errorf("busy-network ceiling in force: %v, want %v", got, want)
	}
	version := v["config"].(map[string]any)["version"]
	staff.do(chromedp.Reload())
	staff.waitJS("the console after a reload", `!document.getElementById("app").hidden`, 0)
	selectEvent(staff, "nat")
	shown := `document.getElementById("p-busy").value === "custom" && document.getElementById("p-busyr").value === "90" && document.getElementById("p-busyb").value === "40"`
	staff.waitJS("the saved ceiling after a reload", shown, 0)
	if !staff.visible("p-busyr") || !strings.Contains(staff.text("busyNote"), "Custom:") {
		t.Errorf("after a reload: fields shown %v, note %q", staff.visible("p-busyr"), staff.text("busyNote"))
	}
	if got := save(staff); !strings.Contains(got, "Nothing changed") {
		t.Errorf("saving the reloaded ceiling again: %q", got)
	}

	// Values the server refuses: its 400 under the fields, nothing changed.
	refused := func(rate, burst, says string) {
		t.Helper()
		clearField(staff, "p-busyr")
		clearField(staff, "p-busyb")
		staff.do(chromedp.SendKeys(chromedp.ID("p-busyr"), rate), chromedp.SendKeys(chromedp.ID("p-busyb"), burst))
		staff.do(chromedp.Click(chromedp.ID("save")))
		staff.waitJS("the refusal under the fields", fmt.Sprintf(`document.getElementById("e-busy").textContent.includes(%q)`, says), 0)
		if a, e := staff.text("alert"), staff.text("e-busy"); !strings.Contains(a, e) || !strings.Contains(e, "limits.busy_network") {
			t.Errorf("%s a minute, %s at once: alert %q, under the fields %q", rate, burst, a, e)
		}
		if !eval[bool](staff, `document.getElementById("p-busyr").getAttribute("aria-invalid") === "true" && document.getElementById("p-busyb").getAttribute("aria-invalid") === "true"`) {
			t.Errorf("%s a minute, %s at once: the fields are not marked invalid", rate, burst)
		}
		v := view()
		if got := busyOf(v); !reflect.DeepEqual(got, want) || v["config"].(map[string]any)["version"] != version {
			t.Errorf("%s a minute, %s at once refused, yet stored: %v (version %v, was %v)", rate, burst, got, v["config"].(map[string]any)["version"], version)
		}
	}
	refused("90", "20000000", "burst must be between 1 and 10000000")
	staff.shot("busy-network-refused")
	if staff.axe("the sale editor with a refused busy-network ceiling") > 0 {
		t.Errorf("axe-core found violations in the editor (above)")
	}
	refused("-5", "40", "never unlimited")

	// A blank field: refused in the page, no request.
	clearField(staff, "p-busyr")
	staff.do(chromedp.Click(chromedp.ID("save")))
	staff.waitJS("the blank field refused", `document.getElementById("e-busy").textContent.startsWith("Write both")`, 0)
	if got := staff.text("alert"); !strings.Contains(got, "correct the highlighted fields") {
		t.Errorf("a blank rate: alert %q", got)
	}
	if v := view(); v["config"].(map[string]any)["version"] != version {
		t.Errorf("a blank rate saved something: version %v, was %v", v["config"].(map[string]any)["version"], version)
	}

	// Back to the default: stored as 0, the default in force again.
	choose(staff, "p-busy", "default")
	if got := save(staff); !strings.Contains(got, "Saved nat") {
		t.Fatalf("saving the default ceiling: %q", got)
	}
	v = view()
	if got, def := busyOf(v), v["friction"].(map[string]any)["busy_network"]; !reflect.DeepEqual(got, map[string]any{"per_second": 0.0, "burst": 0.0}) ||
		!reflect.DeepEqual(def, map[string]any{"per_second": 1.0, "burst": 100.0}) {
		t.Errorf("after choosing the default: stored %v, in force %v", got, def)
	}
}
