package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/anteroom/anteroom/internal/nodetest"
)

// embedder serves a shop's page that frames src, on its own loopback
// origin; the page marks <body data-loaded> once the frame has loaded
// (a frame refused by its CSP loads too: an error page).
func embedder(t *testing.T, src string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><title>Shop</title><body><h1>Shop</h1>
<iframe id="room" title="Waiting room" src=%q width="390" height="700" onload="document.body.dataset.loaded = '1'"></iframe></body></html>`, src)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// frameText returns the text of element id in the room framed from
// another site (its own target: site isolation keeps it in its own
// process), or "" when no frame of room shows one yet.
func frameText(t *testing.T, p *tab, room, id string) string {
	t.Helper()
	infos, err := chromedp.Targets(p.ctx)
	if err != nil {
		t.Fatalf("targets: %v", err)
	}
	for _, info := range infos {
		if info.Type != "iframe" || !strings.HasPrefix(info.URL, room) {
			continue
		}
		ctx, cancel := chromedp.NewContext(p.ctx, chromedp.WithTargetID(info.TargetID))
		ctx, stop := context.WithTimeout(ctx, nodetest.Patience)
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.getElementById(%q) || {}).textContent || ""`, id)))
		stop()
		cancel()
		if err == nil && s != "" {
			return s
		}
	}
	return ""
}

// TestEmbeddedRoom: a sale that names a shop's origin in frame_ancestors
// renders in that shop's frame (from another site), and Chromium refuses
// the same frame on any other origin (CSP frame-ancestors). Staff set the
// list in the console, where an entry that is not an origin is refused.
// Then staff close the room with a message in the console: the page shows
// it, framed and not, with joining off, until they reopen it.
func TestEmbeddedRoom(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "framed", sale{supply: 100, name: "Framed drop", opensIn: -time.Minute, startsIn: time.Hour, window: 60, rate: 10})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	u, err := url.Parse(n.URL())
	if err != nil {
		t.Fatal(err)
	}
	// The room on localhost, the shops on 127.0.0.1: another site.
	room := "http://localhost:" + u.Port() + "/e/framed"
	allowed, other := embedder(t, room), embedder(t, room)
	version := func() any {
		return nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/framed", admin, nil).Body["config"].(map[string]any)["version"]
	}
	v0 := version()

	// Staff name the shop in the console: an entry that is not an origin
	// is refused under the field, nothing saved; the shop's origin is.
	staff := signIn(t, browser, n)
	selectEvent(staff, "framed")
	staff.do(chromedp.SetValue(chromedp.ID("f-frame"), allowed.URL+"/shop"))
	if got := save(staff); !strings.Contains(got, "frame_ancestors[0]") || !strings.Contains(staff.text("e-frame"), "is not an origin") {
		t.Fatalf("saving a path as an origin: alert %q, field note %q; want both to name frame_ancestors[0]", got, staff.text("e-frame"))
	}
	if v := version(); v != v0 {
		t.Fatalf("version %v after the refused save, want %v", v, v0)
	}
	staff.do(chromedp.SetValue(chromedp.ID("f-frame"), allowed.URL))
	if got := save(staff); !strings.Contains(got, "Saved framed") || !strings.Contains(got, "frame_ancestors") {
		t.Fatalf("saving the shop's origin: %q", got)
	}
	nodetest.WaitFor(t, "the node to serve the list", 0, func() bool {
		return strings.Contains(nodetest.Call(t, http.MethodGet, room, nil, nil).Header.Get("Content-Security-Policy"), "frame-ancestors "+allowed.URL)
	})

	shop := newTab(t, browser, "allowed-shop", deskW, deskH, nil)
	shop.do(chromedp.Navigate(allowed.URL))
	shop.waitJS("the frame to load", `document.body.dataset.loaded === "1"`, 0)
	nodetest.WaitFor(t, "the framed room to render the sale", 0, func() bool { return frameText(t, shop, room, "name") == "Framed drop" })

	elsewhere := newTab(t, browser, "other-shop", deskW, deskH, nil)
	elsewhere.do(chromedp.Navigate(other.URL))
	elsewhere.waitJS("the refused frame to load", `document.body.dataset.loaded === "1"`, 0)
	// The frame has loaded (an error page): the room never ran in it.
	if got := frameText(t, elsewhere, room, "name"); got != "" {
		t.Errorf("the room renders %q in a frame of %s, which frame_ancestors does not name", got, other.URL)
	}

	// A shopper in the queue before the closure keeps their place.
	en := catalog(t, "en")
	queued := newTab(t, browser, "queued", phoneW, phoneH, nil)
	queued.do(chromedp.Navigate(room))
	queued.waitJS("the join button", joinEnabled, 0)
	queued.do(chromedp.Click(chromedp.ID("join")))
	queued.waitJS("the shuffle window", fmt.Sprintf(`document.getElementById("state").textContent === %q`, en["st_prequeue"]), 0)

	// Closed by staff: the message, framed and on its own page.
	msg := "Stock count: back at two."
	staff.do(chromedp.SetValue(chromedp.ID("closeMsg"), msg), chromedp.Click(chromedp.ID("close")))
	staff.waitJS("the closed badge", `document.getElementById("badge").textContent === "closed" && !document.getElementById("reopen").disabled`, 0)
	p := newTab(t, browser, "closed", phoneW, phoneH, nil)
	p.do(chromedp.Navigate(room))
	p.waitJS("the closure's message", fmt.Sprintf(`document.getElementById("result").textContent === %q`, msg), 0)
	if eval[bool](p, `!document.getElementById("join").disabled`) {
		t.Error("the join button is enabled in a closed room")
	}
	queued.waitJS("the queued shopper told the room is closed, place kept", fmt.Sprintf(`document.getElementById("state").textContent === %q && document.getElementById("result").textContent === %q`, en["st_roomClosed"], msg), 15*time.Second)
	queued.shot("queued-room-closed")
	shop2 := newTab(t, browser, "allowed-shop-closed", deskW, deskH, nil)
	shop2.do(chromedp.Navigate(allowed.URL))
	nodetest.WaitFor(t, "the framed room to show the message", 0, func() bool { return frameText(t, shop2, room, "result") == msg })
	p.shot("room-closed")

	// Reopened: joining is on again.
	staff.do(chromedp.Click(chromedp.ID("reopen")))
	staff.waitJS("the reopened sale", `document.getElementById("badge").textContent !== "closed" && document.getElementById("reopen").disabled`, 0)
	p.waitJS("the join button after reopening", `!document.getElementById("join").disabled && document.getElementById("result").hidden`, 30*time.Second)
	queued.waitJS("the queued shopper back in the window", fmt.Sprintf(`document.getElementById("state").textContent === %q && document.getElementById("result").hidden`, en["st_prequeue"]), 30*time.Second)
}
