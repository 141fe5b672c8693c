package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// basicStates are the basic page's states the axe-core sweep checks, each
// reached for real on its own sale: the lobby before the queue opens and
// while it is open, waiting (with and without the automatic refresh),
// paused, admitted, sold out, a sale that has ended, and the refusal of a
// join that needs JavaScript (a proof of work). The granted claim and the
// per-user limit are checked by TestNoJSWholeSale.
var basicStates = []string{"upcoming", "open", "waiting", "waiting-manual", "paused", "admitted", "sold_out", "closed", "needs-js"}

// TestAxeNoJSEveryStateAndLanguage: axe-core finds no WCAG 2.2 AA
// violation in the basic page (the waiting room without JavaScript), in
// every state of basicStates and every language, on a phone, and in
// English on a laptop. A page that refreshes itself is checked as
// axeNoJS says (its off switch first, and without the refresh by every
// rule: "waiting-manual").
func TestAxeNoJSEveryStateAndLanguage(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	axeSource(t)
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	open := func(id string, s sale) {
		s.opensIn, s.startsIn = -3*time.Second, -2*time.Second
		nodetest.CreateSale(t, n, id, s)
	}
	nodetest.CreateSale(t, n, "nj-upcoming", sale{supply: 10, opensIn: time.Hour, startsIn: 2 * time.Hour, window: 60, rate: 10})
	open("nj-open", sale{supply: 10, rate: 10})
	// One admission every 1,000 s: the waiting tab stays waiting however
	// long a loaded machine takes over every language.
	open("nj-wait", sale{supply: 10, rate: 0.001})
	open("nj-paused", sale{supply: 10, rate: 0.001})
	open("nj-admitted", sale{supply: 10, rate: 100})
	open("nj-sold", sale{supply: 1, rate: 100})
	nodetest.CreateSale(t, n, "nj-closed", sale{supply: 10, opensIn: -time.Hour, startsIn: -50 * time.Minute, endsAfterStart: 10 * time.Minute, rate: 10})
	open("nj-work", sale{supply: 10, rate: 10, pow: 8})
	for _, id := range []string{"nj-wait", "nj-paused"} {
		for range 3 { // people ahead
			if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+id+"/join", nil, nil); a.Status != http.StatusOK {
				t.Fatalf("join %s ahead: %d %s", id, a.Status, a.Raw)
			}
		}
	}
	checked := 0
	sweep := func(width, height int64, langs []string) {
		tabs := map[string]*tab{}
		join := func(state, id string) *tab {
			p := newNoJSTab(t, browser, fmt.Sprintf("basic-%s-%d", state, width), width, height)
			p.do(chromedp.Navigate(n.URL() + "/e/" + id + "/basic"))
			if state != "needs-js" && (state != "sold_out" || width == phoneW) {
				p.waitJS(state+": the join form", `document.getElementById("join") !== null`, 0)
				p.submit("join")
			}
			tabs[state] = p
			return p
		}
		for _, st := range []struct{ state, id string }{{"waiting", "nj-wait"}, {"paused", "nj-paused"}, {"admitted", "nj-admitted"}, {"sold_out", "nj-sold"}, {"needs-js", "nj-work"}} {
			join(st.state, st.id)
		}
		tabs["waiting-manual"] = tabs["waiting"]
		for _, st := range []struct{ state, id string }{{"upcoming", "nj-upcoming"}, {"open", "nj-open"}, {"closed", "nj-closed"}} {
			p := newNoJSTab(t, browser, fmt.Sprintf("basic-%s-%d", st.state, width), width, height)
			tabs[st.state] = p
		}
		ids := map[string]string{"upcoming": "nj-upcoming", "open": "nj-open", "waiting": "nj-wait", "waiting-manual": "nj-wait", "paused": "nj-paused",
			"admitted": "nj-admitted", "sold_out": "nj-sold", "closed": "nj-closed", "needs-js": "nj-work"}
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/nj-paused/pause", admin, nil); a.Status != http.StatusOK {
			t.Fatalf("pause: %d %s", a.Status, a.Raw)
		}
		if width == phoneW { // the only unit goes to someone else
			tok, who := nodetest.Admit(t, n, "nj-sold", nil)
			if c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/nj-sold/claim", map[string]string{"Authorization": "Bearer " + tok, "Cookie": who["Cookie"]}, nil); c.Status != http.StatusCreated {
				t.Fatalf("claim the only unit: %d %s", c.Status, c.Raw)
			}
		}
		for _, lang := range langs {
			msgs := catalog(t, lang)
			for _, state := range basicStates {
				p := tabs[state]
				page := n.URL() + "/e/" + ids[state] + "/basic?lang=" + lang
				switch state {
				case "waiting-manual":
					page += "&refresh=off"
				case "waiting", "paused", "admitted":
					page += "&refresh=on"
				}
				p.do(chromedp.Navigate(page))
				want := map[string]string{"upcoming": `document.getElementById("phase").textContent !== ""`,
					"open":           `document.getElementById("join") !== null`,
					"waiting":        fmt.Sprintf(`document.getElementById("state").textContent === %q && document.getElementById("toggle") !== null`, msgs["st_waiting"]),
					"waiting-manual": fmt.Sprintf(`document.getElementById("state").textContent === %q && document.getElementById("check") !== null && document.querySelector('meta[http-equiv="refresh"]') === null`, msgs["st_waiting"]),
					"paused":         fmt.Sprintf(`document.getElementById("state").textContent === %q`, msgs["st_paused"]),
					"admitted":       `document.getElementById("claim") !== null`,
					// Sold out for a shopper who joined (the phone's); a
					// visitor who comes later sees the phase (the laptop's).
					"sold_out": fmt.Sprintf(`(document.getElementById("result") !== null && document.getElementById("result").dataset.kind === "sold_out") || document.getElementById("phase").textContent === %q`, msgs["phSold"]),
					"closed":   fmt.Sprintf(`document.getElementById("phase").textContent === %q`, msgs["phClosed"]),
					"needs-js": `document.getElementById("join") !== null`,
				}[state]
				p.waitJS(lang+" "+state, want, 10*time.Second)
				if state == "needs-js" {
					p.submit("join")
					p.waitJS(lang+" the proof-of-work refusal", `document.getElementById("result") !== null && document.getElementById("result").dataset.kind === "pow_required"`, 0)
				}
				if got := eval[string](p, `document.documentElement.lang`); got != map[string]string{"zh": "zh-Hans"}[lang] && got != lang {
					t.Errorf("%s %s: <html lang=%q>", lang, state, got)
				}
				p.axeNoJS(fmt.Sprintf("%s %s at %d px", lang, state, width))
				checked++
			}
		}
	}
	sweep(phoneW, phoneH, pageLangs)
	sweep(deskW, deskH, []string{"en"})
	t.Logf("axe-core checked %d basic-page states × languages × widths", checked)
}
