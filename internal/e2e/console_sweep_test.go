package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestConsoleSweep: three shoppers claim from one network; staff open the
// sweep from the console, see the group (its hash, never an address),
// pass axe, choose it, give a reason and keep the units void, and cancel:
// the page says so and lists no group any more, the claims read
// cancelled, and the CSV link downloads the sweep.
func TestConsoleSweep(t *testing.T) {
	n := startNode(t)
	nodetest.CreateSale(t, n, "swp", sale{supply: 5, name: "Sweep drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 100})
	var ids []string
	for range 3 {
		tok, who := nodetest.Admit(t, n, "swp", nil)
		who["Authorization"] = "Bearer " + tok
		a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/swp/claim", who, nil)
		if a.Status != http.StatusCreated {
			t.Fatalf("claim: %d %s", a.Status, a.Raw)
		}
		ids = append(ids, nodetest.Str(a.Body, "claim_id"))
	}
	browser := startBrowser(t)
	staff := signIn(t, browser, n)
	selectEvent(staff, "swp")
	link := eval[string](staff, `document.getElementById("sweep").href`)
	if link != n.URL()+"/admin/sweep?event=swp" {
		t.Fatalf("the console links the sweep at %q", link)
	}
	staff.do(chromedp.Navigate(link))
	staff.waitJS("the sweep's groups", `document.querySelectorAll("#groups tr").length === 1`, 15*time.Second)
	if row := eval[string](staff, `document.querySelector("#groups tr").textContent`); !strings.Contains(row, "network") || strings.Contains(row, "127.0.0") {
		t.Errorf("the group row reads %q, want the network's hash and no address", row)
	}
	if href := eval[string](staff, `document.getElementById("csv").href`); href != n.URL()+"/admin/events/swp/sweep?format=csv" {
		t.Errorf("the CSV link is %q", href)
	}
	staff.axe("the sweep with a group")
	staff.do(chromedp.Click(chromedp.ID("g0")), chromedp.SendKeys(chromedp.ID("reason"), "ring: one network"), chromedp.Click(chromedp.ID("go")))
	staff.waitJS("the cancellation", `document.getElementById("msg").textContent === "3 claims cancelled." && document.querySelectorAll("#groups tr").length === 0`, 15*time.Second)
	staff.axe("the sweep after a cancellation")
	admin := bearerOf(n.AdminToken)
	for _, id := range ids {
		if got := nodetest.Str(nodetest.Call(t, http.MethodGet, n.URL()+"/events/swp/claims/"+id, admin, nil).Body, "status"); got != "cancelled" {
			t.Errorf("claim %s reads %q, want cancelled", id, got)
		}
	}
	staff.shot("sweep")
}
