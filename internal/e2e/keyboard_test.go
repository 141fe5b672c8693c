package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// focused is the id of the focused element, or its tag name without one.
const focused = `(() => { const e = document.activeElement; return !e ? "" : e.id || e.tagName.toLowerCase(); })()`

// tabTo presses Tab until the element with id has the focus, at most max
// times, and returns the ids focused on the way (the last one is id).
func (p *tab) tabTo(id string, max int) []string {
	p.t.Helper()
	var order []string
	for range max {
		p.do(chromedp.KeyEvent(kb.Tab))
		order = append(order, eval[string](p, focused))
		if order[len(order)-1] == id {
			return order
		}
	}
	p.t.Fatalf("tab %s: %d presses of Tab focused %v, never #%s", p.name, max, order, id)
	return nil
}

// focusVisible fails the test unless the focused element shows a focus
// indicator: it matches :focus-visible and has a solid outline of at
// least 2 px.
func (p *tab) focusVisible(id string) {
	p.t.Helper()
	got := eval[string](p, `(() => { const e = document.activeElement, s = getComputedStyle(e);
		return e.id + " " + e.matches(":focus-visible") + " " + s.outlineStyle + " " + s.outlineWidth; })()`)
	var gotID, style, width string
	var visible bool
	fmt.Sscanf(got, "%s %t %s %s", &gotID, &visible, &style, &width)
	if gotID != id || !visible || style == "none" || width == "0px" || width == "1px" {
		p.t.Errorf("tab %s: focus indicator of #%s: %q, want :focus-visible with an outline of 2 px or more", p.name, id, got)
	}
}

// liveLog records every text the page's live region (#live) speaks and
// every figure #ahead shows, with the time, from now on.
const liveLog = `(() => {
	window.__live = []; window.__ahead = [];
	const rec = (id, into) => new MutationObserver(() => into.push({t: Date.now(), s: document.getElementById(id).textContent}))
		.observe(document.getElementById(id), {childList: true, characterData: true, subtree: true});
	rec("live", __live); rec("ahead", __ahead);
	return true;
})()`

type spoken struct {
	T float64 `json:"t"`
	S string  `json:"s"`
}

// TestKeyboardSale: a shopper who uses only the keyboard completes a sale
// on a phone-sized page: Tab reaches the join button after the language
// switcher, with a visible focus ring; Enter joins; the queue is read out
// by the live region at a sensible pace (the state at once, the moving
// numbers at most every 30 s, not every poll); Tab reaches the claim
// button once admitted and Space claims it; the result is read out once,
// even as the order goes from pending to confirmed; Tab is never trapped.
// axe-core checks the live page in each state the shopper passes through.
func TestKeyboardSale(t *testing.T) {
	n := startNode(t)
	if err := n.StartWorker(context.Background()); err != nil {
		t.Fatalf("order worker: %v", err)
	}
	browser := startBrowser(t)
	axeSource(t)
	nodetest.CreateSale(t, n, "keys", sale{supply: 5, opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 0.3})
	// People ahead, so the shopper waits while the numbers move.
	for range 8 {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/keys/join", nil, nil); a.Status != http.StatusOK {
			t.Fatalf("join ahead: %d %s", a.Status, a.Raw)
		}
	}
	msgs := catalog(t, "en")

	p := newTab(t, browser, "keyboard", phoneW, phoneH, nil)
	p.do(chromedp.Navigate(n.URL() + "/e/keys"))
	p.waitJS("the join button", joinEnabled, 0)
	p.axe("the open sale")
	eval[bool](p, liveLog)

	order := p.tabTo("join", 6)
	if strings.Join(order, ",") != "lang,join" {
		t.Errorf("focus order from the top: %v, want the language switcher, then the join button", order)
	}
	p.focusVisible("join")
	p.shot("focus-join")
	p.do(chromedp.KeyEvent(kb.Enter))
	p.waitJS("the queue", `document.getElementById("state").textContent === `+fmt.Sprintf("%q", msgs["st_waiting"]), 10*time.Second)
	p.axe("waiting in the queue")
	p.shot("waiting")

	p.waitJS("admission", claimVisible, 60*time.Second)
	p.axe("admitted")
	order = p.tabTo("claim", 12)
	p.focusVisible("claim")
	p.shot("focus-claim")
	p.do(chromedp.KeyEvent(" "))
	p.waitJS("the granted result", resultKind+` === "granted"`, 15*time.Second)
	p.waitJS("the confirmed order", `document.getElementById("result").textContent.includes("Status: confirmed.")`, 20*time.Second)
	p.axe("granted")
	p.shot("granted")
	t.Logf("Tab from the admitted page to the claim button: %v", order)

	// No trap: Tab goes on through the page and comes round to the top;
	// Shift+Tab goes back.
	order = p.tabTo("lang", 20)
	p.do(chromedp.KeyEvent(kb.Tab, chromedp.KeyModifiers(chromedp.ModifierShift)))
	if back := eval[string](p, focused); back == "lang" {
		t.Errorf("Shift+Tab left the focus on the switcher")
	}
	t.Logf("Tab after the sale, round to the switcher: %v", order)

	live, ahead := eval[[]spoken](p, `__live`), eval[[]spoken](p, `__ahead`)
	var waiting []spoken
	granted := 0
	for _, s := range live {
		switch {
		case strings.HasPrefix(s.S, msgs["st_waiting"]):
			waiting = append(waiting, s)
		case strings.HasPrefix(s.S, msgs["granted"]):
			granted++
		}
	}
	t.Logf("the live region spoke %d times: %+v; #ahead showed %d figures", len(live), live, len(ahead))
	if len(waiting) == 0 {
		t.Errorf("the live region never said the shopper was in the queue")
	}
	for i := 1; i < len(waiting); i++ {
		if gap := time.Duration(waiting[i].T-waiting[i-1].T) * time.Millisecond; gap < 30*time.Second {
			t.Errorf("the queue's figures were spoken %s apart (%q, then %q), want at most every 30 s", gap, waiting[i-1].S, waiting[i].S)
		}
	}
	if len(ahead) <= len(waiting) {
		t.Errorf("#ahead showed %d figures and the live region spoke the queue %d times: want the figures to move more often than they are spoken", len(ahead), len(waiting))
	}
	if granted != 1 {
		t.Errorf("the result was spoken %d times, want once", granted)
	}
}

// TestReducedMotion: with prefers-reduced-motion: reduce, nothing on the
// waiting room or the console moves (no animation, no transition); without
// it the progress bar still glides.
func TestReducedMotion(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "calm", sale{supply: 10, name: "Calm drop", opensIn: -time.Minute, startsIn: time.Hour, window: 60, rate: 10})
	moving := `Array.from(document.querySelectorAll("*")).filter((e) => { const s = getComputedStyle(e);
		return s.animationName !== "none" || s.transitionDuration.split(",").some((d) => parseFloat(d) > 0); }).map((e) => e.tagName + "#" + e.id)`
	for _, reduce := range []bool{false, true} {
		p := newTab(t, browser, fmt.Sprint("motion-", reduce), phoneW, phoneH, map[string]any{"Authorization": "Bearer " + n.AdminToken})
		if reduce {
			if _, err := chromedp.Call(p.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: "reduce"}}}); err != nil {
				t.Fatalf("emulate reduced motion: %v", err)
			}
		}
		p.do(chromedp.Navigate(n.URL() + "/admin/events/calm/preview?state=waiting&lang=en"))
		p.waitJS("the waiting preview", `document.getElementById("state").textContent === "You're in the queue"`, 10*time.Second)
		got := eval[[]string](p, moving)
		switch {
		case reduce && len(got) > 0:
			t.Errorf("with reduced motion these still move: %v", got)
		case !reduce && !strings.Contains(strings.Join(got, " "), "I#fill"):
			t.Errorf("without reduced motion the progress bar does not glide (moving: %v)", got)
		}
		if reduce {
			p.do(chromedp.Navigate(n.URL() + "/admin/"))
			p.waitJS("the console", `document.readyState === "complete"`, 10*time.Second)
			if got := eval[[]string](p, moving); len(got) > 0 {
				t.Errorf("the console with reduced motion: these still move: %v", got)
			}
		}
	}
}
