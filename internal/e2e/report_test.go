package e2e

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/anteroom/anteroom/tokens"
	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestConsoleReport: after a small sale — three admitted, two of them
// claiming the two units; a "members" lane nobody joined; one bypass pass
// minted and redeemed — staff open the post-sale report from the console
// and see its figures and charts (inline SVG, no external script), the
// conversion per lane and the pass counters, on a laptop and on a phone
// without sideways scrolling; a viewer account may read it.
func TestConsoleReport(t *testing.T) {
	n := startNode(t)
	nodetest.CreateSale(t, n, "rep", sale{supply: 2, name: "Report drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 100,
		lanes: []map[string]any{{"name": "members", "share": 0.5}}})
	m := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/rep/passes", bearerOf(n.AdminToken), []byte(`{"uses":1}`))
	if m.Status != http.StatusCreated {
		t.Fatalf("mint: %d %s", m.Status, m.Raw)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/rep/join", map[string]string{tokens.PassHeader: nodetest.Str(m.Body, "pass")}, nil); a.Status != http.StatusOK || nodetest.Str(a.Body, "admission_token") == "" {
		t.Fatalf("pass redeem: %d %s", a.Status, a.Raw)
	}
	var toks []string
	var whos []map[string]string
	for range 3 {
		tok, who := nodetest.Admit(t, n, "rep", nil)
		toks, whos = append(toks, tok), append(whos, who)
	}
	for i, who := range whos[:2] { // the third never claims
		who["Authorization"] = "Bearer " + toks[i]
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/rep/claim", who, nil); a.Status != http.StatusCreated {
			t.Fatalf("claim: %d %s", a.Status, a.Raw)
		}
	}
	// A viewer may read the report, in both formats.
	createAccount(t, n, bearerOf(n.AdminToken), "vera", "viewer")
	viewer := staffSignIn(t, n, "vera", "password of vera")
	for _, path := range []string{"/report", "/report.csv"} {
		if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/rep"+path, viewer, nil); a.Status != http.StatusOK {
			t.Errorf("a viewer reads %s: %d %s", path, a.Status, a.Raw)
		}
	}
	browser := startBrowser(t)
	staff := signIn(t, browser, n)
	selectEvent(staff, "rep")
	link := eval[string](staff, `document.getElementById("report").href`)
	if link != n.URL()+"/admin/report?event=rep" {
		t.Fatalf("the console links the report at %q", link)
	}
	staff.do(chromedp.Navigate(link))
	checkReport(t, staff)
	staff.shot("report")

	phone := newTab(t, browser, "report-phone", phoneW, phoneH, nil)
	phone.do(chromedp.Navigate(n.URL() + "/admin/"))
	phone.waitJS("the sign-in form", `!document.getElementById("signin").hidden`, 10*time.Second)
	phone.do(chromedp.SendKeys(chromedp.ID("token"), n.AdminToken), chromedp.Click(chromedp.CSS(`#signin button`)))
	phone.waitJS("the console", `!document.getElementById("app").hidden`, 10*time.Second)
	phone.do(chromedp.Navigate(n.URL() + "/admin/report?event=rep"))
	checkReport(t, phone)
	if w := eval[int](phone, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
		t.Errorf("the report scrolls sideways on a phone by %d px", w)
	}
	phone.shot("report")
}

// checkReport waits for the report page to draw and checks its figures.
func checkReport(t *testing.T, p *tab) {
	t.Helper()
	p.waitJS("the report", `location.pathname === "/admin/report" && document.querySelectorAll("#tiles .tile").length > 0`, 15*time.Second)
	tile := func(label string) string {
		return eval[string](p, `[...document.querySelectorAll("#tiles .tile")].find((d) => d.querySelector(".l").textContent === "`+label+`").querySelector(".v").textContent`)
	}
	for label, want := range map[string]string{"Joined": "3", "Admitted": "3", "Present": "3", "Granted": "2", "Buyers": "2"} {
		if got := tile(label); got != want {
			t.Errorf("report tile %s = %q, want %q", label, got, want)
		}
	}
	for _, chart := range []string{"funnel", "j2a", "a2c"} {
		if n := eval[int](p, `document.querySelectorAll("#`+chart+` rect").length`); n == 0 {
			t.Errorf("chart %s drew no bars", chart)
		}
	}
	lanes := eval[[]string](p, `[...document.querySelectorAll("#lanes tr")].map((tr) => [...tr.cells].map((td) => td.textContent).join("|"))`)
	want := []string{"default|66.7 %|3|3|2|2|0", "members|0.0 %|0|0|0|0|0", "pass|0.0 %|—|1|0|0|0"}
	if !reflect.DeepEqual(lanes, want) {
		t.Errorf("lanes %q, want %q", lanes, want)
	}
	passes := eval[[]string](p, `[...document.querySelectorAll("#passes .tile")].map((d) => d.querySelector(".l").textContent + "=" + d.querySelector(".v").textContent)`)
	if want := []string{"Minted=1", "Redeemed=1", "Revoked=0", "Refused=0"}; !reflect.DeepEqual(passes, want) {
		t.Errorf("pass tiles %q, want %q", passes, want)
	}
	if href := eval[string](p, `document.getElementById("csv").getAttribute("href")`); href != "/admin/events/rep/report.csv" {
		t.Errorf("CSV link %q", href)
	}
}
