package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/chromedp/chromedp"
)

// TestConsoleNewEventDefaults: the console's new-event form starts from
// the server's defaults (GET /admin/defaults, event.DefaultConfig), after
// another event's form (other values) was open.
func TestConsoleNewEventDefaults(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "other", sale{supply: 50, name: "Other drop", opensIn: time.Hour, startsIn: 2 * time.Hour, window: 30, rate: 7})
	staff := signIn(t, browser, n)
	selectEvent(staff, "other")
	staff.do(chromedp.Click(chromedp.ID("new")))
	d := event.DefaultConfig()
	want := map[string]string{
		"admit_rate_per_second": fmt.Sprint(d.AdmitRatePerSecond),
		"per_user_limit":        fmt.Sprint(d.PerUserLimit),
		"buckets":               fmt.Sprint(d.Buckets),
		"admission_ttl_seconds": fmt.Sprint(d.AdmissionTTLSeconds),
		"claim_ttl_seconds":     fmt.Sprint(d.ClaimTTLSeconds),
		"random_window_seconds": fmt.Sprint(d.RandomWindowSeconds),
		"max_active":            fmt.Sprint(d.MaxActive),
		"reserve_units":         fmt.Sprint(d.ReserveUnits),
	}
	for name, v := range want {
		staff.waitJS("the default "+name+" = "+v, fmt.Sprintf(`document.getElementById("f-%s").value === %q`, name, v), 10*time.Second)
	}
	staff.waitJS("the default mode", fmt.Sprintf(`document.getElementById("m-%s").checked && document.getElementById("f-id").value === "" && document.getElementById("f-supply").value === ""`, d.Mode), 10*time.Second)
}
