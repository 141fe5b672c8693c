package web

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/event"
)

// TestRoomFraming: the waiting room may be framed by nobody by default
// (CSP frame-ancestors 'none' and X-Frame-Options: DENY), by exactly the
// origins the sale names once it names some (and no X-Frame-Options,
// which cannot say a list); the console never.
func TestRoomFraming(t *testing.T) {
	frameAncestors := func(csp string) string {
		for _, d := range strings.Split(csp, ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(d), "frame-ancestors "); ok {
				return v
			}
		}
		return ""
	}
	_, _, h := getPage(t, testApp(t), "/e/ev", nil)
	if got := frameAncestors(strings.Join(h["Content-Security-Policy"], "")); got != "'none'" {
		t.Errorf("default: frame-ancestors %q, want 'none'", got)
	}
	if got := strings.Join(h["X-Frame-Options"], ","); got != "DENY" {
		t.Errorf("default: X-Frame-Options %q, want DENY", got)
	}
	// An unknown event's page: nobody frames it either.
	_, _, h = getPage(t, testApp(t), "/e/nosuch", nil)
	if got := frameAncestors(strings.Join(h["Content-Security-Policy"], "")); got != "'none'" || h["X-Frame-Options"] == nil {
		t.Errorf("unknown event: frame-ancestors %q, X-Frame-Options %q; want 'none' and DENY", got, h["X-Frame-Options"])
	}

	sale := testSale()
	sale.Config.FrameAncestors = []string{"https://shop.example", "https://*.apps.example:8443", "http://localhost:3000"}
	app := mustNew(t, Config{AdminToken: testAdminToken, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{Sales: consoleSales{sale: sale}})
	status, _, h := getPage(t, app, "/e/ev", nil)
	csp := strings.Join(h["Content-Security-Policy"], "")
	if want := "https://shop.example https://*.apps.example:8443 http://localhost:3000"; status != 200 || frameAncestors(csp) != want {
		t.Errorf("with a list: %d, frame-ancestors %q, want %q (CSP %q)", status, frameAncestors(csp), want, csp)
	}
	if h["X-Frame-Options"] != nil {
		t.Errorf("with a list: X-Frame-Options %q, want none (it cannot name several origins)", h["X-Frame-Options"])
	}
	if strings.Count(csp, "frame-ancestors") != 1 {
		t.Errorf("CSP %q: want one frame-ancestors directive", csp)
	}

	_, _, h = getPage(t, app, "/admin/", nil)
	if got := frameAncestors(strings.Join(h["Content-Security-Policy"], "")); got != "'none'" || strings.Join(h["X-Frame-Options"], "") != "DENY" {
		t.Errorf("console: frame-ancestors %q, X-Frame-Options %q; want 'none', DENY whatever the sales allow", got, h["X-Frame-Options"])
	}
}

// TestPublicEventClosed: the public event carries staff's closure (its
// message and end) while the room is closed, and nothing after.
func TestPublicEventClosed(t *testing.T) {
	sale := testSale()
	sale.Config.Closed = &event.Closure{Message: "Back soon: stock count."}
	app := mustNew(t, Config{AdminToken: testAdminToken, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{Sales: consoleSales{sale: sale}})
	_, body, _ := getPage(t, app, "/events/ev", nil)
	if !strings.Contains(body, `"closed":{"message":"Back soon: stock count."}`) {
		t.Errorf("closed: public event %s, want the closure's message", body)
	}
	_, body, _ = getPage(t, testApp(t), "/events/ev", nil)
	if strings.Contains(body, `"closed"`) {
		t.Errorf("open: public event %s, want no closure", body)
	}
}
