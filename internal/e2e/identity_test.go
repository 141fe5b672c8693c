package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestAnonymousVisitor runs the page against a node in anonymous identity
// mode: the server names the visitor with a signed cookie and ignores the
// page's X-User-ID, and the page still joins, claims and follows its claim.
func TestAnonymousVisitor(t *testing.T) {
	n := startNode(t, "anonymous")
	browser := startBrowser(t)
	createSale(t, n, "anon", sale{supply: 3, opensIn: -2 * time.Second, startsIn: -time.Second, rate: 100})

	p := newTab(t, browser, "room-anonymous", phoneW, phoneH, nil)
	p.do(chromedp.Navigate(n.URL() + "/e/anon"))
	p.waitJS("the join button", joinEnabled, 10*time.Second)
	p.do(chromedp.Click(chromedp.ID("join")))
	p.waitJS("admission", claimVisible, 15*time.Second)
	p.do(chromedp.Click(chromedp.ID("claim")))
	p.waitJS("the granted result", resultKind+` === "granted"`, 15*time.Second)
	if got := p.text("result"); !strings.Contains(got, "Status: pending") && !strings.Contains(got, "Status: confirmed") {
		t.Errorf("result %q: want the claim's status, looked up with the visitor cookie", got)
	}
	p.shot("granted")

	// The claim belongs to the visitor, not to the X-User-ID the page sent.
	id := eval[string](p, `JSON.parse(localStorage.getItem("anteroom_res_anon")).id`)
	uid := eval[string](p, `localStorage.getItem("anteroom_uid")`)
	look := call(t, http.MethodGet, n.URL()+"/events/anon/claims/"+id, map[string]string{"X-User-ID": uid}, nil)
	if look.status == http.StatusOK {
		t.Errorf("claim %s shown to a caller with only the page's X-User-ID and no visitor cookie", id)
	}
}
