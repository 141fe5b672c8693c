package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/chromedp/chromedp"
)

// signInAs opens the console in a tab of width×height and signs account
// name in with its password.
func signInAs(t *testing.T, browser context.Context, n *node.Node, name, password string, w, h int64) *tab {
	t.Helper()
	p := newTab(t, browser, "console-"+name, w, h, nil)
	p.do(chromedp.Navigate(n.URL() + "/admin/"))
	p.waitJS("the sign-in form", `!document.getElementById("signin").hidden`, 10*time.Second)
	p.do(chromedp.SendKeys(chromedp.ID("name"), name), chromedp.SendKeys(chromedp.ID("password"), password), chromedp.Click(chromedp.CSS(`#signin button`)))
	p.waitJS("the console of "+name, `!document.getElementById("app").hidden`, 10*time.Second)
	return p
}

// TestConsoleAccountsAndAudit: the admin token bootstraps the first admin
// in the console; the admin adds an operator and a viewer; the operator
// (on a phone) pauses a sale; the viewer's pause button is disabled and
// the server refuses it 403 anyway; the audit list shows who did what,
// with before → after.
func TestConsoleAccountsAndAudit(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "gala", sale{supply: 10, name: "Gala", opensIn: -2 * time.Second, startsIn: time.Minute, rate: 20})

	boot := signIn(t, browser, n) // the admin token
	boot.waitJS("the accounts panel", `!document.getElementById("accounts").hidden`, 10*time.Second)
	addAccount := func(p *tab, name, role string) {
		p.t.Helper()
		p.do(chromedp.SendKeys(chromedp.ID("a-name"), name), chromedp.SetValue(chromedp.ID("a-role"), role),
			chromedp.SendKeys(chromedp.ID("a-pw"), "password of "+name), chromedp.Click(chromedp.ID("a-add")))
		p.waitJS("account "+name, `document.querySelector('#accList tr[data-name="`+name+`"]') !== null`, 10*time.Second)
	}
	addAccount(boot, "ada", "admin")

	admin := signInAs(t, browser, n, "ada", "password of ada", deskW, deskH)
	if got := admin.text("who"); got[:len("ada (admin)")] != "ada (admin)" {
		t.Fatalf("who: %q", got)
	}
	addAccount(admin, "olga", "operator")
	addAccount(admin, "vic", "viewer")

	op := signInAs(t, browser, n, "olga", "password of olga", phoneW, phoneH)
	if op.visible("accounts") {
		t.Errorf("the operator sees the accounts panel")
	}
	selectEvent(op, "gala")
	op.waitJS("the pause button enabled", `!document.getElementById("pause").disabled`, 10*time.Second)
	op.do(chromedp.Click(chromedp.ID("pause")))
	op.waitJS("paused", `document.getElementById("badge").textContent === "paused"`, 10*time.Second)
	op.shot("operator-paused-phone")
	ada := staffSignIn(t, n, "ada", "password of ada")
	isPaused := func() bool {
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/gala", ada, nil)
		cfg, _ := a.Body["config"].(map[string]any)
		p, _ := cfg["paused"].(bool)
		return p
	}
	if !isPaused() {
		t.Fatalf("the operator's pause did not hold")
	}

	viewer := signInAs(t, browser, n, "vic", "password of vic", phoneW, phoneH)
	selectEvent(viewer, "gala")
	viewer.waitJS("the dashboard", `document.getElementById("badge").textContent === "paused"`, 10*time.Second)
	if !eval[bool](viewer, `document.getElementById("resume").disabled && document.getElementById("save").disabled`) {
		t.Errorf("the viewer's resume or save button is enabled")
	}
	// Even past the disabled button, the server refuses: 403, not 401.
	got := eval[string](viewer, `fetch("/admin/events/gala/resume", {method: "POST", credentials: "same-origin", headers: {"X-CSRF-Token": csrf}})
		.then(async (r) => r.status + " " + (await r.json()).code)`)
	if got != "403 forbidden" {
		t.Errorf("viewer resumes: %s, want 403 forbidden", got)
	}
	if !isPaused() {
		t.Fatalf("the viewer resumed the sale")
	}
	viewer.shot("viewer-read-only-phone")

	// The audit: the operator's pause with before → after, and the accounts.
	admin.waitJS("the pause in the audit", `[...document.querySelectorAll('#auditList li[data-action="event.pause"]')].some((li) => li.dataset.who === "olga" && li.textContent.includes("paused:false → paused:true"))`, 15*time.Second)
	admin.waitJS("the accounts in the audit", `document.querySelectorAll('#auditList li[data-action="account.create"]').length === 3`, 15*time.Second)
	admin.shot("audit-desk")
	phone := signInAs(t, browser, n, "ada", "password of ada", phoneW, phoneH)
	phone.waitJS("the audit on a phone", `document.querySelectorAll('#auditList li[data-action="event.pause"]').length >= 1`, 15*time.Second)
	if w := eval[float64](phone, `document.documentElement.scrollWidth`); w > phoneW+1 {
		t.Errorf("the console is %v px wide on a %d px phone", w, phoneW)
	}
	phone.do(chromedp.ScrollIntoView(chromedp.ID("audit")))
	phone.shot("audit-phone")
	// The CSV export is there for the admin.
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit.csv", bearerOf(n.AdminToken), nil); a.Status != http.StatusForbidden {
		t.Errorf("the admin token reads the audit after the first admin: %d", a.Status)
	}
}
