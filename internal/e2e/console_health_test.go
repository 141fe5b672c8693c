package e2e

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
)

// TestConsoleShowsHealthHold: when the shop's health endpoint fails, the
// console shows the sale held by the shop's health check (badge, list,
// banner) and the paused event with its reason, live; when it recovers,
// the hold and the resumed event show the same way.
func TestConsoleShowsHealthHold(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(int(status.Load())) }))
	t.Cleanup(shop.Close)
	n := startNode(t, func(c node.Config) node.Config { c.WebhookAllowHTTP = true; return c })
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "shophealth", sale{supply: 10, name: "Health drop", opensIn: -3 * time.Second, startsIn: -2 * time.Second, rate: 1})
	conf := `{"max_active": 5, "shop": {"secret": "shop-secret-for-console-test-01", "health":
		{"url": "` + shop.URL + `/healthz", "interval_seconds": 1, "timeout_seconds": 1, "fail_after": 1, "recover_after": 1}}}`
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/shophealth", admin, []byte(conf)); a.Status != http.StatusOK {
		t.Fatalf("shop health config: %d %s", a.Status, a.Raw)
	}
	staff := signIn(t, browser, n)
	selectEvent(staff, "shophealth")
	staff.waitJS("the health line", `document.getElementById("shop").textContent.includes("Shop health: OK")`, 15*time.Second)

	status.Store(http.StatusServiceUnavailable)
	staff.waitJS("the held badge", `document.getElementById("badge").textContent === "held: shop health"`, 15*time.Second)
	staff.waitJS("the hold banner", `document.getElementById("shop").dataset.held === "1" && document.getElementById("shop").textContent.includes("HTTP 503")`, 5*time.Second)
	staff.waitJS("paused by the shop's health check", `document.querySelector('#lc li[data-type="paused"][data-reason="health"]') !== null`, 10*time.Second)
	staff.waitJS("held in the event list", `[...document.querySelectorAll("#list .badge")].some((b) => b.textContent === "held")`, 15*time.Second)
	if got := eval[bool](staff, `document.getElementById("resume").disabled`); !got {
		t.Error("Resume is enabled for a health hold: staff would think it ends it")
	}
	staff.shot("health-hold")

	status.Store(http.StatusOK)
	staff.waitJS("the hold to end", `document.getElementById("shop").dataset.held === "0"`, 15*time.Second)
	staff.waitJS("resumed by the shop's health check", `document.querySelector('#lc li[data-type="resumed"][data-reason="health"]') !== null`, 10*time.Second)
	if got := eval[string](staff, `document.getElementById("badge").textContent`); got == "held: shop health" {
		t.Errorf("badge %q after recovery", got)
	}
}
