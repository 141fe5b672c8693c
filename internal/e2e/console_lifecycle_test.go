package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestConsoleLifecycleEvents: the console lists a sale's lifecycle events
// live — the sale opening and the shuffle window closing, then a pause and
// a resume staff make from the console.
func TestConsoleLifecycleEvents(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "live", sale{supply: 10, name: "Live drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 1})
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/live/join", nil, nil); a.Status != http.StatusOK {
		t.Fatalf("join: %d %s", a.Status, a.Raw)
	}
	staff := signIn(t, browser, n)
	selectEvent(staff, "live")
	has := func(typ string) string {
		return `document.querySelector('#lc li[data-type="` + typ + `"]') !== null`
	}
	staff.waitJS("sale opened and window closed", has("sale_opened")+" && "+has("window_closed"), 10*time.Second)
	staff.do(chromedp.Click(chromedp.ID("pause")))
	staff.waitJS("the paused event", has("paused"), 10*time.Second)
	staff.do(chromedp.Click(chromedp.ID("resume")))
	staff.waitJS("the resumed event", has("resumed"), 10*time.Second)
	if got := eval[string](staff, `document.querySelector("#lc li").dataset.type`); got != "resumed" {
		t.Errorf("newest lifecycle event %q, want resumed", got)
	}
	staff.shot("lifecycle-events")
}
