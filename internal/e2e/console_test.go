package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/chromedp/chromedp"
)

// signIn opens the console in a new tab and signs in with the admin token
// typed into the form.
func signIn(t *testing.T, browser context.Context, n *node.Node) *tab {
	t.Helper()
	staff := newTab(t, browser, "console", deskW, deskH, nil)
	staff.do(chromedp.Navigate(n.URL() + "/admin/"))
	staff.waitJS("the sign-in form", `!document.getElementById("signin").hidden`, 10*time.Second)
	staff.shot("sign-in")
	staff.do(chromedp.SendKeys(chromedp.ID("token"), n.AdminToken), chromedp.Click(chromedp.CSS(`#signin button`)))
	staff.waitJS("the console", `!document.getElementById("app").hidden`, 10*time.Second)
	return staff
}

// selectEvent opens event id in the console and waits for its form.
func selectEvent(staff *tab, id string) {
	staff.t.Helper()
	staff.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`button[data-id=%q]`, id))))
	staff.waitJS("the form of "+id, fmt.Sprintf(`document.getElementById("f-id").value === %q`, id), 10*time.Second)
}

// save submits the form and waits for the console's answer.
func save(staff *tab) string {
	staff.t.Helper()
	staff.do(chromedp.Click(chromedp.ID("save")))
	staff.waitJS("the save answer", `(() => { const a = document.getElementById("alert"); return !a.hidden && a.textContent !== ""; })()`, 10*time.Second)
	return staff.text("alert")
}

// TestConsoleModeAndRate: staff sign in, switch a sale that has not
// started to a lottery, pause and resume a running one, and raise its
// admission rate; shoppers' waiting rooms follow each change. The mode of
// the running sale is locked, with the reason shown.
func TestConsoleModeAndRate(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "evening", sale{supply: 50, name: "Evening drop", opensIn: -2 * time.Second, startsIn: 10 * time.Minute, window: 30, rate: 20})
	nodetest.CreateSale(t, n, "flash", sale{supply: 50, name: "Flash drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 0.2})
	for i := range 5 {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/flash/join", nil, nil); a.Status != http.StatusOK { // a new visitor each
			t.Fatalf("join %d: %d %s", i, a.Status, a.Raw)
		}
	}

	planner := newTab(t, browser, "evening-room", phoneW, phoneH, nil)
	planner.do(chromedp.Navigate(n.URL() + "/e/evening"))
	planner.waitJS("the FCFS sale", `document.getElementById("meta").textContent.startsWith("First come")`, 10*time.Second)
	waiter := newTab(t, browser, "flash-room", phoneW, phoneH, nil)
	waiter.do(chromedp.Navigate(n.URL() + "/e/flash"))
	waiter.waitJS("the join button", joinEnabled, 10*time.Second)
	waiter.do(chromedp.Click(chromedp.ID("join")))
	waiter.waitJS("a position", `document.getElementById("pos").textContent === "6"`, 10*time.Second)
	t.Logf("time to first position: %.0f ms from clicking join to the position shown (no shuffle window)",
		eval[float64](waiter, `window.anteroom.firstPosition - window.anteroom.joinClick`))
	waiter.waitJS("an ETA", `document.getElementById("eta").textContent !== "—"`, 10*time.Second)
	waiter.shot("waiting-slow-rate")

	staff := signIn(t, browser, n)
	selectEvent(staff, "evening")
	staff.shot("evening-fcfs")
	staff.do(chromedp.Click(chromedp.ID("m-lottery")))
	if got := save(staff); !strings.Contains(got, "Saved evening") || !strings.Contains(got, "mode") {
		t.Fatalf("saving the mode: %q", got)
	}
	planner.waitJS("the lottery", `document.getElementById("meta").textContent.startsWith("Lottery") && document.getElementById("cdLabel").textContent === "Registration closes in"`, 15*time.Second)
	planner.shot("now-a-lottery")

	selectEvent(staff, "flash")
	staff.waitJS("the mode lock", `document.getElementById("m-fcfs").disabled && !document.getElementById("modeNote").hidden`, 10*time.Second)
	if got := staff.text("modeNote"); !strings.Contains(got, "locked") {
		t.Errorf("mode lock note %q", got)
	}
	staff.do(chromedp.Click(chromedp.ID("pause")))
	staff.waitJS("paused", `document.getElementById("badge").textContent === "paused"`, 10*time.Second)
	waiter.waitJS("the paused notice", `(() => { const e = document.getElementById("notice"); return !e.hidden && e.dataset.kind === "paused"; })()`, 15*time.Second)
	waiter.shot("paused")
	staff.do(chromedp.Click(chromedp.ID("resume")))
	staff.waitJS("resumed", `!document.getElementById("pause").disabled`, 10*time.Second)

	staff.do(chromedp.SetValue(chromedp.ID("f-admit_rate_per_second"), ""), chromedp.SendKeys(chromedp.ID("f-admit_rate_per_second"), "50"))
	if got := save(staff); !strings.Contains(got, "admit_rate_per_second") {
		t.Fatalf("saving the rate: %q", got)
	}
	waiter.waitJS("admission at the new rate", claimVisible, 15*time.Second)
	waiter.shot("admitted-after-rate-change")

	staff.waitJS("charts", `document.querySelectorAll("#dash polyline").length === 5 && document.getElementById("v-lag").textContent === "—"`, 10*time.Second)
	// The dashboard polls: it shows the raised frontier within a few of
	// its refreshes (reading it once raced a refresh still showing the
	// slow rate's 1.3).
	staff.waitJS("the dashboard frontier at 6 (everyone who joined)", `document.getElementById("v-frontier").textContent === "6"`, 10*time.Second)
	staff.do(chromedp.Click(chromedp.ID("rebuild")), chromedp.Click(chromedp.ID("rebuild")))
	staff.waitJS("the rebuild answer", `/Rebuild is not available|rebuilt/.test(document.getElementById("alert").textContent)`, 10*time.Second)
	t.Logf("rebuild: %q", staff.text("alert"))
	staff.shot("dashboard")

	for id, want := range map[string]string{"evening": "lottery 20", "flash": "fcfs 50"} {
		cfg := adminGet(t, n, id)
		if got := fmt.Sprint(cfg["mode"], " ", cfg["admit_rate_per_second"]); got != want {
			t.Errorf("%s stored as %s, want %s", id, got, want)
		}
	}
}
