package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/tokens"
	"github.com/chromedp/chromedp"
)

// TestConsolePasses: an operator mints a bypass pass in the console (shown
// once), sees it in the pass list, watches a redemption counted, revokes it
// there, and the audit list shows both actions; the revoked pass is then
// refused.
func TestConsolePasses(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "passes", sale{supply: 10, name: "Passes", opensIn: -2 * time.Second, startsIn: 30 * time.Minute, rate: 1})
	body, _ := json.Marshal(map[string]string{"name": "olga", "role": "operator", "password": "password of olga"})
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", map[string]string{"Authorization": "Bearer " + n.AdminToken}, body); a.Status != http.StatusCreated {
		t.Fatalf("create olga: %d %s", a.Status, a.Raw)
	}
	op := signInAs(t, browser, n, "olga", "password of olga", phoneW, phoneH)
	selectEvent(op, "passes")
	op.waitJS("the passes panel", `!document.getElementById("passes").hidden && !document.getElementById("ps-mint").disabled`, 10*time.Second)
	op.do(chromedp.SetValue(chromedp.ID("ps-uses"), "0"), chromedp.SendKeys(chromedp.ID("ps-note"), "qa run"), chromedp.Click(chromedp.ID("ps-mint")))
	op.waitJS("the minted pass", `document.querySelector("#passAlert .key") !== null`, 10*time.Second)
	pass := eval[string](op, `document.querySelector("#passAlert .key").textContent`)
	if !strings.HasPrefix(pass, "ps1.") {
		t.Fatalf("the console showed %q, want a pass", pass)
	}
	op.waitJS("the pass listed", `document.querySelector('#passList tr[data-state="active"]') !== null`, 10*time.Second)
	if got := eval[string](op, `document.getElementById("passList").textContent`); strings.Contains(got, "ps1.") || !strings.Contains(got, "qa run") {
		t.Errorf("pass list %q: want the note and never the pass", got)
	}

	redeem := func() nodetest.Answer {
		return nodetest.Call(t, http.MethodPost, n.URL()+"/events/passes/join", map[string]string{tokens.PassHeader: pass}, nil)
	}
	if a := redeem(); a.Status != http.StatusOK || nodetest.Str(a.Body, "state") != "admitted" {
		t.Fatalf("redeem: %d %s", a.Status, a.Raw)
	}
	op.waitJS("the redemption counted", `document.getElementById("passCounts").textContent.includes("1 redeemed")`, 15*time.Second)

	_ = eval[bool](op, `(window.confirm = () => true, true)`)
	op.do(chromedp.Click(chromedp.CSS(`#passList tr[data-state="active"] button`)))
	op.waitJS("the pass revoked", `document.querySelector('#passList tr[data-state="revoked"]') !== null`, 10*time.Second)
	op.waitJS("both actions audited", `document.querySelector('#auditList li[data-action="pass.mint"][data-who="olga"]') !== null && document.querySelector('#auditList li[data-action="pass.revoke"][data-who="olga"]') !== null`, 10*time.Second)
	op.shot("passes-phone")
	if a := redeem(); a.Status != http.StatusForbidden || nodetest.Str(a.Body, "code") != "pass_revoked" {
		t.Errorf("a revoked pass: %d %s, want 403 pass_revoked", a.Status, a.Raw)
	}

	// A sale with a lane shows the lane's own queue.
	now := time.Now().UTC().Truncate(time.Second)
	laned, _ := json.Marshal(map[string]any{"name": "Laned", "supply": 10, "prequeue_opens_at": now.Add(-2 * time.Second),
		"starts_at": now.Add(30 * time.Minute), "ends_at": now.Add(time.Hour), "admit_rate_per_second": 10,
		"lanes": []any{map[string]any{"name": "members", "share": 0.25, "starts_at": now.Add(-time.Second)}}})
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/laned", map[string]string{"Authorization": "Bearer " + n.AdminToken}, laned); a.Status != http.StatusCreated {
		t.Fatalf("create laned: %d %s", a.Status, a.Raw)
	}
	op.waitJS("the laned sale listed", `document.querySelector('button[data-id="laned"]') !== null`, 15*time.Second)
	selectEvent(op, "laned")
	op.waitJS("the lane's row", `(() => { const r = document.querySelector('#laneList tr[data-name="members"]'); return r !== null && !document.getElementById("laneBox").hidden && r.children[1].textContent === "2.5"; })()`, 10*time.Second)
	if op.visible("passAlert") {
		t.Errorf("the pass panel of another sale still shows %q", op.text("passAlert"))
	}
	op.shot("lanes-phone")
}
