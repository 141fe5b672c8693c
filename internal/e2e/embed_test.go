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
// the same frame on any other origin (CSP frame-ancestors); without a list
// nobody may frame it. Then staff close the room with a message: the page
// shows it, framed and not, and joining is off.
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
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/framed", admin, []byte(`{"frame_ancestors":["`+allowed.URL+`"]}`)); a.Status != http.StatusOK {
		t.Fatalf("allow %s: %d %s", allowed.URL, a.Status, a.Raw)
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

	// Closed by staff: the message, framed and on its own page.
	msg := "Stock count: back at two."
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/framed/close", admin, []byte(`{"message":"`+msg+`"}`)); a.Status != http.StatusOK {
		t.Fatalf("close: %d %s", a.Status, a.Raw)
	}
	p := newTab(t, browser, "closed", phoneW, phoneH, nil)
	p.do(chromedp.Navigate(room))
	p.waitJS("the closure's message", fmt.Sprintf(`document.getElementById("result").textContent === %q`, msg), 0)
	if eval[bool](p, `!document.getElementById("join").disabled`) {
		t.Error("the join button is enabled in a closed room")
	}
	shop2 := newTab(t, browser, "allowed-shop-closed", deskW, deskH, nil)
	shop2.do(chromedp.Navigate(allowed.URL))
	nodetest.WaitFor(t, "the framed room to show the message", 0, func() bool { return frameText(t, shop2, room, "result") == msg })
	p.shot("room-closed")

	// Reopened: joining is on again.
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/framed/reopen", admin, nil); a.Status != http.StatusOK {
		t.Fatalf("reopen: %d %s", a.Status, a.Raw)
	}
	p.waitJS("the join button after reopening", `!document.getElementById("join").disabled && document.getElementById("result").hidden`, 30*time.Second)
}
