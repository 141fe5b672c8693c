package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/chromedp/chromedp"
)

// TestSafetyNetWaitingRoom walks a visitor in Chromium through
// deploy/gateway/nginx-safety-net.conf in a real nginx while the room is
// at its threshold (max_active 1, held by another visitor): the site sends
// them to the waiting page, which joins by itself (no button), queues
// them, and once the other admission expires brings them back to the URL
// they asked for, where the site sees their user id.
func TestSafetyNetWaitingRoom(t *testing.T) {
	n := startNode(t)
	gw, users := startGateway(t, n, "nginx-safety-net.conf", "site")
	// The browser must reach the site while the other visitor's admission
	// holds the place: it starts first, and the admission lasts three
	// times a measured page load and join (10 s on an idle machine).
	browser := startBrowser(t)
	ttl := nodetest.Lead(setupPace(t, n, browser, sale{supply: 1, opensIn: -2 * time.Second, startsIn: time.Hour, rate: 1}, nil), 10*time.Second)
	p := newTab(t, browser, "safety-net", phoneW, phoneH, nil)
	room, _ := json.Marshal(map[string]any{
		"name": "the whole site", "mode": "safety_net", "starts_at": time.Now().UTC().Add(-time.Second).Truncate(time.Second),
		"max_active": 1, "admission_ttl_seconds": int(ttl / time.Second), "no_show_grace_seconds": 2,
		"limits": map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}},
	})
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/site", map[string]string{"Authorization": "Bearer " + n.AdminToken}, room); a.Status != http.StatusCreated {
		t.Fatalf("create the room: %d %s", a.Status, a.Raw)
	}
	// Another visitor takes the one place, straight through.
	resp, err := http.Get(gw.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the first visitor: %d, want the site at once", resp.StatusCode)
	}

	p.do(chromedp.Navigate(gw.URL() + "/products/7?size=42"))
	p.waitJS("the waiting page, queued by itself", `location.pathname === "/e/site" && !!window.anteroom && !!document.getElementById("join") && document.getElementById("join").hidden`, 0)
	p.waitJS("the return to the site", `location.pathname + location.search === "/products/7?size=42" && !!document.getElementById("site")`, ttl)
	seen := users()
	// (The browser may also ask the site for its favicon.)
	if len(seen) < 2 || seen[1] == "" || seen[1] == seen[0] {
		t.Fatalf("the site saw X-User-ID %q, want the first visitor, then the queued one", seen)
	}
	for _, u := range seen[1:] {
		if u != seen[1] {
			t.Fatalf("the site saw X-User-ID %q, want every request after the first from the queued visitor", seen)
		}
	}
}

// TestConsoleSafetyNet: the console shows a safety-net room as one (its
// mode chosen, locked once switched on) and lists its queueing_started
// live, with how many wait.
func TestConsoleSafetyNet(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	room, _ := json.Marshal(map[string]any{
		"name": "the whole site", "mode": "safety_net", "starts_at": time.Now().UTC().Add(-time.Second).Truncate(time.Second),
		"max_active": 1, "limits": map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}},
	})
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/site", map[string]string{"Authorization": "Bearer " + n.AdminToken}, room); a.Status != http.StatusCreated {
		t.Fatalf("create the room: %d %s", a.Status, a.Raw)
	}
	// A save shows the room at once; its first tick steps it (freezes its
	// window), and only then does a queued visitor wait.
	nodetest.WaitFor(t, "the room's first tick", 10*time.Second, func() bool {
		s, ok := n.Snapshots.Get("site")
		return ok && !s.ServerTime.IsZero()
	})
	for i, want := range []string{"admitted", "waiting"} {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/site/join", nil, nil); a.Status != http.StatusOK || nodetest.Str(a.Body, "state") != want {
			t.Fatalf("join %d: %d %s, want %s", i, a.Status, a.Raw, want)
		}
	}
	staff := signIn(t, browser, n)
	selectEvent(staff, "site")
	staff.waitJS("the room's mode", `document.getElementById("m-safety_net").checked && document.getElementById("m-safety_net").disabled`, 10*time.Second)
	staff.waitJS("queueing started", `(() => { const li = document.querySelector('#lc li[data-type="queueing_started"]'); return !!li && li.textContent.includes("1 waiting"); })()`, 15*time.Second)
	staff.shot("safety-net-queueing")
}
