package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestAxeRoomEveryStateAndLanguage: axe-core finds no WCAG 2.2 AA
// violation in the waiting room, in every state and every language, on a
// phone and on a laptop: the built-in page with anteroom's colours, then
// with an operator's branding (a dark background, a light primary).
func TestAxeRoomEveryStateAndLanguage(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	axeSource(t)
	nodetest.CreateSale(t, n, "a11y", sale{supply: 100, name: "Spring drop", opensIn: -time.Minute, startsIn: time.Hour, window: 60, rate: 10})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	base := n.URL() + "/admin/events/a11y"

	checked := 0
	sweep := func(label string, widths [][2]int64) {
		for _, size := range widths {
			p := newTab(t, browser, fmt.Sprintf("%s-%d", label, size[0]), size[0], size[1], map[string]any{"Authorization": "Bearer " + n.AdminToken})
			for _, lang := range pageLangs {
				msgs := catalog(t, lang)
				for _, state := range pageStates {
					p.do(chromedp.Navigate(fmt.Sprintf("%s/preview?state=%s&lang=%s", base, state, lang)))
					id, want := stateText(msgs, state)
					p.waitJS(lang+" "+state, fmt.Sprintf(`document.getElementById(%q).textContent === %q`, id, want), 10*time.Second)
					p.axe(fmt.Sprintf("%s %s %s at %d px", label, lang, state, size[0]))
					checked++
				}
			}
		}
	}
	sweep("built-in", [][2]int64{{phoneW, phoneH}, {deskW, deskH}})

	// Brand colours that fail WCAG 2.2 AA contrast are refused, the pair
	// and its ratio named, and nothing is saved.
	for body, want := range map[string]string{
		`{"colors":{"text":"#777777"}}`:                           "colors.text #777777 on colors.background (default) #ffffff has a contrast ratio of 4.47:1, below the 4.5:1",
		`{"colors":{"primary":"#ffd166","background":"#ffffff"}}`: "colors.primary #ffd166 on colors.background #ffffff has a contrast ratio of 1.44:1, below the 3.0:1",
		`{"colors":{"background":"#14161a"}}`:                     "colors.text (default) #1d1d1f on colors.background #14161a",
	} {
		a := nodetest.Call(t, http.MethodPut, base+"/page", admin, []byte(body))
		if a.Status != http.StatusBadRequest || a.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(nodetest.Str(a.Body, "detail"), want) {
			t.Errorf("save %s: %d %s %s, want a 400 problem naming %q", body, a.Status, a.Header.Get("Content-Type"), a.Raw, want)
		}
	}
	if a := nodetest.Call(t, http.MethodGet, base+"/page", admin, nil); a.Status != http.StatusOK || a.Body["draft"] != nil {
		t.Fatalf("after the refused colours: %d %s, want no draft", a.Status, a.Raw)
	}
	draft := `{"name":"Night Owl","colors":{"primary":"#ffd166","background":"#14161a","text":"#f2f2f2"}}`
	if d := nodetest.Call(t, http.MethodPut, base+"/page", admin, []byte(draft)); d.Status != http.StatusOK {
		t.Fatalf("save the dark draft: %d %s", d.Status, d.Raw)
	}
	sweep("dark-brand", [][2]int64{{phoneW, phoneH}})
	t.Logf("axe-core checked %d page states × languages × widths", checked)
}

// TestAxeConsole: axe-core finds no WCAG 2.2 AA violation in the staff
// console on a laptop and on a phone: the sign-in form, the console with
// a sale open (dashboard, form, page panel, accounts, passes, audit, one's
// own password: refused and changed) and the sale's report.
func TestAxeConsole(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	axeSource(t)
	nodetest.CreateSale(t, n, "a11y", sale{supply: 10, name: "Console drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 10})
	createAccount(t, n, bearerOf(n.AdminToken), "ada", "admin")
	password := "password of ada"
	for _, size := range [][2]int64{{deskW, deskH}, {phoneW, phoneH}} {
		staff := newTab(t, browser, fmt.Sprintf("console-%d", size[0]), size[0], size[1], nil)
		staff.do(chromedp.Navigate(n.URL() + "/admin/"))
		staff.waitJS("the sign-in form", `!document.getElementById("signin").hidden`, 10*time.Second)
		staff.axe("the sign-in form")
		staff.do(chromedp.SendKeys(chromedp.ID("name"), "ada"), chromedp.SendKeys(chromedp.ID("password"), password), chromedp.Click(chromedp.CSS(`#signin button`)))
		staff.waitJS("the console", `!document.getElementById("app").hidden`, 10*time.Second)
		selectEvent(staff, "a11y")
		staff.waitJS("the page panel, the dashboard and the password form", `!document.getElementById("pageBox").hidden && !document.getElementById("pwBox").hidden && document.getElementById("pv-state").options.length === `+strconv.Itoa(len(pageStates))+` && document.getElementById("dash").children.length > 0`, 10*time.Second)
		staff.axe("the console with a sale open")
		// The password form refusing a wrong current password, then
		// changing it (the session stays signed in).
		staff.do(chromedp.SendKeys(chromedp.ID("pw-old"), "not the password"), chromedp.SendKeys(chromedp.ID("pw-new"), "a new password for ada"), chromedp.Click(chromedp.ID("pw-change")))
		staff.waitJS("the wrong current password refused", `!document.getElementById("pwAlert").hidden && document.getElementById("pwAlert").className.includes("err")`, 10*time.Second)
		staff.axe("the password form with an error")
		next := fmt.Sprintf("ada's password no. %d", size[0])
		staff.do(chromedp.SendKeys(chromedp.ID("pw-old"), password), chromedp.SendKeys(chromedp.ID("pw-new"), next), chromedp.Click(chromedp.ID("pw-change")))
		staff.waitJS("the password changed", `document.getElementById("pwAlert").className.includes("ok")`, 10*time.Second)
		staff.axe("the password form after a change")
		if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/session", map[string]string{"Cookie": staff.cookieHeader(n.URL() + "/admin/")}, nil); a.Status != http.StatusOK {
			t.Errorf("the console's session after its password change: %d %s", a.Status, a.Raw)
		}
		password = next
		staff.do(chromedp.Navigate(n.URL() + "/admin/report?event=a11y"))
		staff.waitJS("the report", `document.readyState === "complete" && document.querySelector("h1") !== null && document.querySelector("h1").textContent !== ""`, 10*time.Second)
		staff.axe("the report")
	}
}
