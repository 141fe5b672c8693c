package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/report"
)

// TestConsoleReportETA: six people join a sale admitting two a second
// and poll until admitted; the report's ETA error counts each who waited
// (all of them: six is within the sample), and the console's report page
// shows it as an accessible chart — an SVG with a title and a
// description naming every figure — and as a table with the figures of
// the JSON report, passing axe-core's WCAG 2.2 AA checks on a laptop and
// on a phone.
func TestConsoleReportETA(t *testing.T) {
	n := startNode(t)
	nodetest.CreateSale(t, n, "eta", sale{supply: 10, name: "ETA drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 2})
	base := n.URL() + "/events/eta"
	tickets := make([]string, 6)
	for i := range tickets {
		j := nodetest.Call(t, http.MethodPost, base+"/join", nil, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join: %d %s", j.Status, j.Raw)
		}
		tickets[i] = nodetest.Str(j.Body, "ticket")
	}
	waited, first := 0, map[int]string{}
	nodetest.WaitFor(t, "everyone admitted", 30*time.Second, func() bool {
		left := 0
		for i, tk := range tickets {
			if tk == "" {
				continue
			}
			s := nodetest.Call(t, http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + tk}, nil)
			state := nodetest.Str(s.Body, "state")
			if first[i] == "" && state != "prequeue" { // the draw's countdown is no wait
				first[i] = state
				if state == "waiting" {
					waited++
				}
			}
			if state == "admitted" {
				tickets[i] = ""
				continue
			}
			left++
		}
		return left == 0
	})
	if waited < 3 {
		t.Fatalf("only %d of 6 waited at 2/s: first answers %v", waited, first)
	}
	var rep report.Report
	nodetest.WaitFor(t, "the report to count everyone who waited", 20*time.Second, func() bool {
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/eta/report", bearerOf(n.AdminToken), nil)
		if a.Status != http.StatusOK || json.Unmarshal(a.Raw, &rep) != nil || len(rep.ETAError) != 1 {
			return false
		}
		return rep.ETAError[0].People == int64(waited)
	})
	e := rep.ETAError[0]
	if e.Lane != "default" || e.Stride != 1 || len(e.Points) != 4 || e.Points[0].Count != int64(waited) {
		t.Fatalf("ETA error %+v, want the default lane, everyone sampled, %d answers at join", e, waited)
	}
	pct := func(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

	browser := startBrowser(t)
	for _, size := range [][2]int64{{deskW, deskH}, {phoneW, phoneH}} {
		staff := newTab(t, browser, fmt.Sprintf("report-eta-%d", size[0]), size[0], size[1], nil)
		staff.do(chromedp.Navigate(n.URL() + "/admin/"))
		staff.waitJS("the sign-in form", `!document.getElementById("signin").hidden`, 10*time.Second)
		staff.do(chromedp.SendKeys(chromedp.ID("token"), n.AdminToken), chromedp.Click(chromedp.CSS(`#signin button`)))
		staff.waitJS("the console", `!document.getElementById("app").hidden`, 10*time.Second)
		staff.do(chromedp.Navigate(n.URL() + "/admin/report?event=eta"))
		staff.waitJS("the ETA chart", `document.querySelector("#eta-0") !== null`, 15*time.Second)
		title := eval[string](staff, `document.querySelector("#eta-0 title").textContent`)
		desc := eval[string](staff, `document.querySelector("#eta-0 desc").textContent`)
		label := eval[string](staff, `document.getElementById("eta-0").getAttribute("aria-labelledby")`)
		if !strings.Contains(title, "lane default") || label != "eta-t-0 eta-d-0" {
			t.Errorf("chart title %q, aria-labelledby %q", title, label)
		}
		j := e.Points[0]
		if want := "join: median " + pct(j.MedianAbs) + ", p90 " + pct(j.P90Abs) + " of " + fmt.Sprint(j.Count); !strings.Contains(desc, want) {
			t.Errorf("chart description %q, want it to say %q", desc, want)
		}
		if bars := eval[int](staff, `document.querySelectorAll("#eta-0 rect").length`); bars != 8 {
			t.Errorf("chart has %d bars, want 2 for each of 4 points", bars)
		}
		rows := eval[[]string](staff, `[...document.querySelectorAll("#etaRows tr")].map((tr) => [...tr.cells].map((td) => td.textContent).join("|"))`)
		if len(rows) != 4 {
			t.Fatalf("table rows %q, want 4", rows)
		}
		if want := "default|join|" + fmt.Sprint(j.Count) + "|" + pct(j.MedianAbs) + "|" + pct(j.P90Abs) + "|" + pct(j.Median); rows[0] != want {
			t.Errorf("table row %q, want %q", rows[0], want)
		}
		if w := eval[int](staff, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
			t.Errorf("the report scrolls sideways at %d px by %d px", size[0], w)
		}
		staff.axe(fmt.Sprintf("the report with the ETA's error at %d px", size[0]))
		staff.shot("eta")
	}
}
