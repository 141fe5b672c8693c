package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestRoomClaimsThroughLibrary: the waiting page sends its requests through
// /assets/anteroom.js. A claim made while the sale is paused keeps the
// library's Idempotency-Key (stored under the library's name) across its
// retries, succeeds once staff resume, and the key is dropped after.
func TestRoomClaimsThroughLibrary(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "libroom", sale{supply: 5, opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 50})
	p := newTab(t, browser, "room", phoneW, phoneH, nil)
	p.do(chromedp.Navigate(n.URL() + "/e/libroom"))
	p.waitJS("the join button to unlock", joinEnabled, 10*time.Second)
	p.do(chromedp.Click(chromedp.ID("join")))
	p.waitJS("admission", claimVisible, 20*time.Second)
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/libroom/pause", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("pause: %d %s", a.Status, a.Raw)
	}
	p.do(chromedp.Click(chromedp.ID("claim")))
	p.waitJS("the paused notice", `(() => { const e = document.getElementById("notice"); return !e.hidden && e.dataset.kind === "paused"; })()`, 15*time.Second)
	key := eval[string](p, `localStorage.getItem("anteroom_claim_key_libroom") || ""`)
	if key == "" {
		t.Fatalf("the page's claim keeps no key under the library's name (anteroom_claim_key_libroom)")
	}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/libroom/resume", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("resume: %d %s", a.Status, a.Raw)
	}
	p.waitJS("the granted result", resultKind+` === "granted"`, 20*time.Second)
	if left := eval[bool](p, `localStorage.getItem("anteroom_claim_key_libroom") === null`); !left {
		t.Errorf("the claim's key is still stored after its answer")
	}
}
