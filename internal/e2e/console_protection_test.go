package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// choose sets a select of the console as staff would, firing its change.
func choose(staff *tab, id, value string) {
	staff.t.Helper()
	js := fmt.Sprintf(`(() => { const s = document.getElementById(%q); s.value = %q; s.dispatchEvent(new Event("change")); return s.value === %q; })()`, id, value, value)
	if !eval[bool](staff, js) {
		staff.t.Fatalf("select %s has no option %q", id, value)
	}
}

// TestConsoleJoinProtection: on a node with anonymous visitors a lottery
// asks for a proof of work and a per-IP join budget by default; the
// waiting page solves the proof by itself. Staff see what the defaults
// amount to, turn both off (the console says what that means), and the
// sale then takes a free cookie-less join; a custom budget and "default"
// again are stored as chosen.
func TestConsoleJoinProtection(t *testing.T) {
	n := startNode(t) // anonymous visitors: the default identity
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "draw", sale{supply: 2, mode: "lottery", name: "Evening draw", opensIn: -2 * time.Second, startsIn: 10 * time.Minute, rate: 50})

	shopper := newTab(t, browser, "draw-room", phoneW, phoneH, nil)
	shopper.do(chromedp.Navigate(n.URL() + "/e/draw"))
	shopper.waitJS("the register button", joinEnabled, 10*time.Second)
	shopper.do(chromedp.Click(chromedp.ID("join")))
	shopper.waitJS("registration", `document.getElementById("state").textContent === "You're registered for the draw"`, 30*time.Second)
	if !eval[bool](shopper, `performance.getEntriesByType("resource").some((r) => r.name.endsWith("/assets/pow.js"))`) {
		t.Errorf("the page registered for a lottery with anonymous visitors without solving a proof of work")
	}
	shopper.shot("registered-after-pow")

	staff := signIn(t, browser, n)
	selectEvent(staff, "draw")
	staff.waitJS("the protection notes", `document.getElementById("powNote").textContent !== ""`, 10*time.Second)
	if ip, pow := staff.text("ipNote"), staff.text("powNote"); !strings.HasPrefix(ip, "Default on this node: 10 joins at once") || !strings.HasPrefix(pow, "Default on this node: on") {
		t.Errorf("notes of the defaults: %q / %q", ip, pow)
	}
	staff.shot("protection-defaults")

	choose(staff, "p-ip", "off")
	choose(staff, "p-pow", "off")
	if ip, pow := staff.text("ipNote"), staff.text("powNote"); !strings.HasPrefix(ip, "Off:") || !strings.Contains(pow, "free identities") {
		t.Errorf("notes of off: %q / %q", ip, pow)
	}
	staff.shot("protection-off")
	if got := save(staff); !strings.Contains(got, "Saved draw") || !strings.Contains(got, "limits") {
		t.Fatalf("saving protection off: %q", got)
	}
	lim := adminGet(t, n, "draw")["limits"].(map[string]any)
	if ip := lim["join"].(map[string]any)["ip"].(map[string]any); ip["per_second"] != -1.0 || lim["pow"].(map[string]any)["enabled"] != false {
		t.Fatalf("stored limits after turning off: %v", lim)
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/draw/join", nil, nil); a.Status != http.StatusOK {
		t.Errorf("free cookie-less join with both off: %d %s", a.Status, a.Raw)
	}

	choose(staff, "p-ip", "custom")
	staff.do(chromedp.SendKeys(chromedp.ID("p-ipr"), "30"), chromedp.SendKeys(chromedp.ID("p-ipb"), "3"))
	choose(staff, "p-pow", "default")
	if got := save(staff); !strings.Contains(got, "Saved draw") {
		t.Fatalf("saving a custom budget: %q", got)
	}
	lim = adminGet(t, n, "draw")["limits"].(map[string]any)
	if ip := lim["join"].(map[string]any)["ip"].(map[string]any); ip["per_second"] != 0.5 || ip["burst"] != 3.0 || lim["pow"].(map[string]any)["enabled"] != nil {
		t.Fatalf("stored limits after a custom budget and default proof of work: %v", lim)
	}
	staff.waitJS("the form of the saved budget", `document.getElementById("p-ipr").value === "30" && !document.querySelector(".ipc").hidden`, 10*time.Second)
	if got := save(staff); !strings.Contains(got, "Nothing changed") {
		t.Errorf("saving again without a change: %q", got)
	}
	staff.shot("protection-custom")
}
