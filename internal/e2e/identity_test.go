package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/chromedp/chromedp"
)

// TestAnonymousVisitor runs the page against a node with no identity
// configured: the server names the visitor with a signed cookie, the page
// invents no user id of its own, and it still joins, claims and follows
// its claim. Without the cookie nobody sees the claim.
func TestAnonymousVisitor(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "anon", sale{supply: 3, opensIn: -2 * time.Second, startsIn: -time.Second, rate: 100})

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

	if uid := eval[bool](p, `localStorage.getItem("anteroom_uid") !== null`); uid {
		t.Errorf("the page stored a user id of its own")
	}
	id := eval[string](p, `JSON.parse(localStorage.getItem("anteroom_res_anon")).id`)
	for name, hdr := range map[string]map[string]string{"no cookie": nil, "a made-up X-User-ID": {"X-User-ID": "v-0123"}} {
		if look := nodetest.Call(t, http.MethodGet, n.URL()+"/events/anon/claims/"+id, hdr, nil); look.Status != http.StatusUnauthorized {
			t.Errorf("claim %s looked up with %s: %d %s, want 401", id, name, look.Status, look.Raw)
		}
	}
}

// TestGatewayIdentity runs the page behind a gateway that names the shopper
// (header mode, the gateway on loopback adding X-User-ID, as Chromium's
// extra headers do here): the page sends nothing of its own and the claim
// belongs to the gateway's user.
func TestGatewayIdentity(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "gw", sale{supply: 3, opensIn: -2 * time.Second, startsIn: -time.Second, rate: 100})

	p := newTab(t, browser, "room-gateway", phoneW, phoneH, map[string]any{"X-User-ID": "shopper-7"})
	p.do(chromedp.Navigate(n.URL() + "/e/gw"))
	p.waitJS("the join button", joinEnabled, 10*time.Second)
	p.do(chromedp.Click(chromedp.ID("join")))
	p.waitJS("admission", claimVisible, 15*time.Second)
	p.do(chromedp.Click(chromedp.ID("claim")))
	p.waitJS("the granted result", resultKind+` === "granted"`, 15*time.Second)

	id := eval[string](p, `JSON.parse(localStorage.getItem("anteroom_res_gw")).id`)
	look := n.URL() + "/events/gw/claims/" + id
	if a := nodetest.Call(t, http.MethodGet, look, map[string]string{"X-User-ID": "shopper-7"}, nil); a.Status != http.StatusOK {
		t.Errorf("the gateway's user looking up claim %s: %d %s", id, a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodGet, look, map[string]string{"X-User-ID": "shopper-8"}, nil); a.Status != http.StatusNotFound {
		t.Errorf("another user looking up claim %s: %d %s, want 404", id, a.Status, a.Raw)
	}
}
