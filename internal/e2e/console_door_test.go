package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
)

// uploadMax is the list upload limit of TestConsoleListsAndDoor's node.
const uploadMax = 4096

// TestConsoleListsAndDoor: an admin creates a list in the console's Lists
// panel, dry-runs a CSV upload (the count, nothing stored), uploads it,
// sees a malformed file refused with its line number and a file over the
// limit refused 413 (nothing applied either time), adds and removes one
// entry; then edits a sale's door: rules added, a bad one refused with its
// column (the caret put there, nothing saved), deleted, another moved up
// by keyboard, the block list named, saved; the tester tells what three
// requests would be (by rule, and by the block list). axe finds nothing
// on either panel, on a laptop and a phone; a viewer may test but
// change nothing; the admin API shows what was stored and the audit
// trail every change.
func TestConsoleListsAndDoor(t *testing.T) {
	n := startNode(t, func(c node.Config) node.Config { c.ListUploadMaxBytes = uploadMax; return c })
	browser := startBrowser(t)
	admin := bearerOf(n.AdminToken)
	nodetest.CreateSale(t, n, "gala", sale{supply: 10, name: "Gala", opensIn: -2 * time.Second, startsIn: time.Hour, rate: 20})
	createAccount(t, n, admin, "ada", "admin")
	ada := staffSignIn(t, n, "ada", "password of ada")
	last := newestAudit(t, n, ada)
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	door := func() map[string]any {
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/gala", ada, nil)
		cfg, _ := a.Body["config"].(map[string]any)
		d, _ := cfg["door"].(map[string]any)
		if a.Status != http.StatusOK {
			t.Fatalf("GET the sale: %d %s", a.Status, a.Raw)
		}
		return d
	}
	count := func() any {
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/lists/resellers", ada, nil)
		if a.Status != http.StatusOK {
			t.Fatalf("GET the list: %d %s", a.Status, a.Raw)
		}
		return a.Body["count"]
	}

	staff := signInAs(t, browser, n, "ada", "password of ada", deskW, deskH)
	staff.waitJS("the lists panel", `!document.getElementById("lists").hidden && !document.getElementById("lsNone").hidden`, 0)

	// A list, created.
	staff.do(chromedp.SendKeys(chromedp.ID("ls-name"), "Bad Name"), chromedp.Click(chromedp.ID("ls-create")))
	staff.waitJS("the name refused in the page", `document.getElementById("ls-name").getAttribute("aria-invalid") === "true" && document.activeElement.id === "ls-name"`, 0)
	clearField(staff, "ls-name")
	staff.do(chromedp.SendKeys(chromedp.ID("ls-name"), "resellers"), chromedp.Click(chromedp.ID("ls-create")))
	staff.waitJS("the list created", `document.querySelector('#lsList tr[data-list="resellers"]') !== null && !document.getElementById("lsOne").hidden`, 0)
	if got := staff.text("lsStatus"); !strings.Contains(got, "Created the user list resellers") {
		t.Errorf("after creating: %q", got)
	}

	// A dry run counts; the upload stores.
	lsAnswer := func(what, prefix string) string {
		staff.t.Helper()
		staff.waitJS(what, fmt.Sprintf(`(() => { const s = document.getElementById("lsStatus").textContent, a = document.getElementById("lsAlert");
			return s.startsWith(%q) || (!a.hidden && a.textContent !== ""); })()`, prefix), 0)
		if a := staff.text("lsAlert"); staff.visible("lsAlert") {
			return "alert: " + a
		}
		return staff.text("lsStatus")
	}
	good := file("resellers.csv", "user_id\nu1\nu2\nu3\nu2\n")
	staff.do(chromedp.SetUploadFiles(chromedp.ID("lu-file"), []string{good}), chromedp.Click(chromedp.ID("lu-dry")))
	if got := lsAnswer("the dry run", "Dry run"); !strings.Contains(got, "4 read") || !strings.Contains(got, "would hold 3 entries") || !strings.Contains(got, "Nothing changed") {
		t.Errorf("dry run: %q, want 4 read and 3 entries, nothing changed", got)
	}
	if c := count(); c != float64(0) {
		t.Errorf("after the dry run the list holds %v, want 0", c)
	}
	staff.axe("the lists panel after a dry run")
	staff.do(chromedp.Click(chromedp.ID("lu-send")))
	if got := lsAnswer("the upload", "Uploaded"); !strings.Contains(got, "holds 3 entries") {
		t.Errorf("upload: %q, want 3 entries", got)
	}
	staff.waitJS("the count in the table", `document.querySelector('#lsList tr[data-list="resellers"]').dataset.count === "3"`, 0)
	if c := count(); c != float64(3) {
		t.Errorf("after the upload the list holds %v, want 3", c)
	}

	// A malformed line, by its number; a file over the limit, 413.
	// Neither changes anything, even in replace mode.
	bad := file("bad.csv", "u7\nu8\n\"u9\nu10\n")
	staff.do(chromedp.SetUploadFiles(chromedp.ID("lu-file"), []string{bad}), chromedp.Click(chromedp.ID("lu-send")))
	if got := lsAnswer("the malformed upload refused", "Uploaded"); !strings.Contains(got, "alert: Line 3 of bad.csv is malformed") || !strings.Contains(got, "Nothing of the upload was applied") {
		t.Errorf("malformed upload: %q, want line 3 named", got)
	}
	huge := file("huge.csv", strings.Repeat("u123456789\n", uploadMax/10))
	staff.do(chromedp.SetUploadFiles(chromedp.ID("lu-file"), []string{huge}), chromedp.Click(chromedp.ID("lu-send")))
	staff.waitJS("the 413", `document.getElementById("lsAlert").textContent.includes("huge.csv")`, 0)
	if got := staff.text("lsAlert"); !strings.Contains(got, "too large") || !strings.Contains(got, "4 KiB") {
		t.Errorf("upload over the limit: %q, want too large with the limit", got)
	}
	staff.shot("lists-refused")
	if c := count(); c != float64(3) {
		t.Errorf("after the refused uploads the list holds %v, want 3", c)
	}

	// One entry added, another removed.
	staff.do(chromedp.SendKeys(chromedp.ID("le-value"), "u42"), chromedp.Click(chromedp.ID("le-add")))
	staff.waitJS("the entry added", `document.getElementById("lsStatus").textContent.startsWith("Added u42")`, 0)
	staff.do(chromedp.SendKeys(chromedp.ID("le-value"), "u1"), chromedp.Click(chromedp.ID("le-remove")))
	staff.waitJS("the entry removed", `document.getElementById("lsStatus").textContent.startsWith("Removed u1")`, 0)
	if got := staff.text("lsStatus"); !strings.Contains(got, "holds 3 entries") {
		t.Errorf("after add and remove: %q", got)
	}
	if got := eval[string](staff, `document.getElementById("lsExport").getAttribute("href")`); got != "/admin/lists/resellers/entries" {
		t.Errorf("export link %q", got)
	}
	staff.axe("the lists panel with a refusal shown")

	// The door: three rules, one that does not compile.
	selectEvent(staff, "gala")
	staff.waitJS("the door editor", `!document.getElementById("doorBox").hidden && !document.getElementById("drNone").hidden`, 0)
	addRule := func(name, when, then string) {
		staff.t.Helper()
		staff.do(chromedp.Click(chromedp.ID("drAdd")))
		k := eval[int](staff, `document.getElementById("drRules").children.length`)
		li := fmt.Sprintf(`#drRules li:nth-child(%d) `, k)
		if f := eval[string](staff, focused); !strings.HasSuffix(f, "-name") {
			t.Errorf("after Add rule the focus is on %q, want the new rule's name", f)
		}
		staff.do(chromedp.SendKeys(chromedp.CSS(li+".r-name"), name), chromedp.SendKeys(chromedp.CSS(li+".r-when"), when),
			chromedp.SetValue(chromedp.CSS(li+".r-then"), then))
	}
	addRule("health", `request.path == "/healthz"`, "bypass")
	addRule("bots", `request.headers["user-agent"].startsWith("curl/")`, "sink")
	addRule("broken", `request.path.startsWith(`, "block")
	staff.do(chromedp.SendKeys(chromedp.ID("dr-block"), "resellers"), chromedp.Click(chromedp.ID("drSave")))
	staff.waitJS("the refusal", `!document.getElementById("drAlert").hidden`, 0)
	if got := staff.text("drAlert"); !strings.Contains(got, "invalid_rule") || !strings.Contains(got, "rule broken, line 1, column 25") {
		t.Errorf("the refusal: %q, want invalid_rule naming rule broken at column 25", got)
	}
	where := eval[string](staff, `(() => { const e = document.activeElement; return e.closest("li").querySelector(".r-name").value + " " + e.className + " " + e.selectionStart + " " + e.getAttribute("aria-invalid"); })()`)
	if where != "broken r-when 24 true" {
		t.Errorf("after the refusal the focus is %q, want the caret in broken's condition at offset 24 (column 25), marked invalid", where)
	}
	if got := eval[string](staff, `document.querySelector("#drRules li:nth-child(3) .r-err").textContent`); !strings.HasPrefix(got, "Line 1, column 25: ") {
		t.Errorf("broken's own error %q", got)
	}
	staff.shot("door-refused")
	staff.axe("the door editor with a refused rule")
	if d := mustJSON(t, door()); strings.Contains(d, "health") {
		t.Errorf("the refused save stored %s", d)
	}

	// Fixed by keyboard: broken deleted, bots moved above health.
	staff.do(chromedp.Focus(chromedp.CSS(`#drRules li:nth-child(3) .r-del`)), chromedp.KeyEvent("\r"))
	staff.waitJS("broken deleted", `document.getElementById("drRules").children.length === 2`, 0)
	staff.do(chromedp.Focus(chromedp.CSS(`#drRules li:nth-child(2) .r-up`)), chromedp.KeyEvent("\r"))
	staff.waitJS("bots moved up", `document.querySelector("#drRules li:nth-child(1) .r-name").value === "bots"`, 0)
	if got := eval[string](staff, `document.activeElement.className + " " + document.activeElement.closest("li").querySelector("legend").textContent`); got != "sec r-down Rule 1: bots" {
		t.Errorf("after moving bots to the top the focus is on %q, want its Move down (Move up is disabled there)", got)
	}
	if got := staff.text("drStatus"); !strings.Contains(got, "Moved rule bots to place 1") {
		t.Errorf("the move said %q", got)
	}
	staff.do(chromedp.Click(chromedp.ID("drSave")))
	staff.waitJS("the save", `document.getElementById("drStatus").textContent.startsWith("Saved the door of gala")`, 0)
	saved := door()
	if got := mustJSON(t, saved["rules"]); got != `[{"name":"bots","then":"sink","when":"request.headers[\"user-agent\"].startsWith(\"curl/\")"},{"name":"health","then":"bypass","when":"request.path == \"/healthz\""}]` {
		t.Errorf("stored rules %s", got)
	}
	if got := mustJSON(t, saved["block_lists"]); got != `["resellers"]` {
		t.Errorf("stored block lists %s", got)
	}

	// The tester.
	ask := func(path, headers, user string) {
		staff.t.Helper()
		_ = eval[bool](staff, fmt.Sprintf(`(() => { const v = (id, x) => { document.getElementById(id).value = x; };
			document.getElementById("dtVerdict").textContent = ""; v("dt-path", %q); v("dt-headers", %q); v("dt-user", %q); return true; })()`, path, headers, user))
		staff.do(chromedp.Click(chromedp.ID("dt-run")))
	}
	verdict := func(path, headers, user string) string {
		staff.t.Helper()
		ask(path, headers, user)
		staff.waitJS("the verdict for "+path, `document.getElementById("dtVerdict").textContent !== ""`, 0)
		return staff.text("dtVerdict")
	}
	for _, c := range []struct{ path, headers, user, want string }{
		{"/healthz", "", "", "This request would be: bypass (rule health)"},
		{"/", "User-Agent: curl/8.5", "", "This request would be: sink (rule bots)"},
		{"/shop", "Accept: text/html", "", "This request would be: queue (no rule holds)"},
		{"/shop", "", "u1", "This request would be: queue (no rule holds)"}, // removed from the list above
		{"/healthz", "", "u42", "This request would be: block (on a block list)"},
	} {
		if got := verdict(c.path, c.headers, c.user); !strings.HasPrefix(got, c.want) {
			t.Errorf("tester on %s %q user %q: %q, want %q", c.path, c.headers, c.user, got, c.want)
		}
	}
	ask("/", "no colon here", "")
	staff.waitJS("the header line refused", `document.getElementById("e-dt-headers").textContent.includes("no colon here") && document.activeElement.id === "dt-headers"`, 0)
	if got := staff.text("dtVerdict"); got != "" {
		t.Errorf("a malformed header line: verdict %q, want none", got)
	}
	staff.shot("door-tested")
	staff.axe("the door editor after a test")
	staff.do(chromedp.EmulateViewport(phoneW, phoneH, chromedp.EmulateScale(1)))
	staff.waitJS("the phone layout", `document.documentElement.clientWidth <= 400`, 0)
	if w := eval[int](staff, `document.documentElement.scrollWidth`); w > phoneW {
		t.Errorf("on a phone the console is %d px wide, want at most %d (no sideways scrolling)", w, phoneW)
	}
	staff.shot("door-phone")
	staff.axe("both panels on a phone")

	// A viewer sees both panels, may test, and may change nothing (the
	// server refuses anyway: TestStaffRoles).
	createAccount(t, n, ada, "vera", "viewer")
	viewer := signInAs(t, browser, n, "vera", "password of vera", deskW, deskH)
	viewer.waitJS("the list for a viewer", `document.querySelector('#lsList button[data-list="resellers"]') !== null`, 0)
	viewer.do(chromedp.Click(chromedp.CSS(`#lsList button[data-list="resellers"]`)))
	selectEvent(viewer, "gala")
	viewer.waitJS("the saved door for a viewer", `document.getElementById("drRules").children.length === 2`, 0)
	if got := eval[string](viewer, `["ls-create", "lu-send", "lu-dry", "le-add", "le-remove", "lsDelete", "drSave", "dt-run"].map((id) => id + ":" + document.getElementById(id).disabled).join(" ")`); got != "ls-create:true lu-send:true lu-dry:true le-add:true le-remove:true lsDelete:true drSave:true dt-run:false" {
		t.Errorf("a viewer's buttons: %s", got)
	}
	viewer.do(chromedp.SetValue(chromedp.ID("dt-path"), "/healthz"), chromedp.Click(chromedp.ID("dt-run")))
	viewer.waitJS("the viewer's verdict", `document.getElementById("dtVerdict").textContent.startsWith("This request would be: bypass (rule health)")`, 0)

	// Every change in the audit trail, by ada.
	want := map[string]bool{"list.create": false, "list.load": false, "list.add": false, "list.remove": false, "event.update": false}
	for _, e := range auditSince(t, n, ada, last) {
		a := nodetest.Str(e, "action")
		if nodetest.Str(e, "who") != "ada" {
			continue
		}
		if _, ok := want[a]; ok {
			want[a] = true
		}
		switch a {
		case "list.load", "list.remove", "list.add":
			if after := mustJSON(t, e["after"]); !strings.Contains(after, `"list":"resellers"`) {
				t.Errorf("%s audited as %s", a, after)
			}
		case "event.update":
			if after := mustJSON(t, e["after"]); !strings.Contains(after, `"bots"`) || !strings.Contains(after, `"resellers"`) {
				t.Errorf("the door's save audited as %s", after)
			}
		case "session.sign_in", "list.create", "account.create":
		default:
			t.Errorf("unexpected audit entry %s: %v", a, e)
		}
	}
	for a, seen := range want {
		if !seen {
			t.Errorf("no %s by ada in the audit trail", a)
		}
	}
}

// clearField empties the form field with id.
func clearField(p *tab, id string) {
	p.t.Helper()
	_ = eval[bool](p, fmt.Sprintf(`document.getElementById(%q).value = ""; true`, id))
}
