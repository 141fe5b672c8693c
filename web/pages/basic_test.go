package pages

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/anteroom/anteroom/web/shopper"
	"github.com/gofiber/fiber/v2"
)

// TestBasicRefresh: the basic page reloads itself no sooner than the poll
// asks (whole seconds, rounded up), to its own address, with the off
// switch as its first link; turned off (?refresh=off, then its cookie) it
// has no meta refresh and offers a check by hand; a page with nothing to
// wait for does not refresh.
func TestBasicRefresh(t *testing.T) {
	sale := testSale()
	pg := New(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{Sales: consoleSales{sale: sale}})
	var view shopper.BasicView
	app := fiber.New()
	app.Get("/e/ev/basic", func(c *fiber.Ctx) error { return pg.Basic(c, sale, view) })
	get := func(query, cookie string) (string, []string) {
		t.Helper()
		req := httptest.NewRequest("GET", "/e/ev/basic"+query, nil)
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		return string(b), resp.Header.Values("Set-Cookie")
	}
	for _, tc := range []struct {
		refresh time.Duration
		want    string
	}{
		{800 * time.Millisecond, `content="1; url=/e/ev/basic"`},
		{time.Second, `content="1; url=/e/ev/basic"`},
		{1200 * time.Millisecond, `content="2; url=/e/ev/basic"`},
		{30 * time.Second, `content="30; url=/e/ev/basic"`},
	} {
		view = shopper.BasicView{State: "waiting", Position: 9, Ahead: 8, ETA: time.Minute, Refresh: tc.refresh}
		body, _ := get("", "")
		if !strings.Contains(body, `<meta http-equiv="refresh" `+tc.want+`>`) {
			t.Errorf("refresh after %s: want %s in %.500s", tc.refresh, tc.want, body)
		}
		if i, j := strings.Index(body, `<a `), strings.Index(body, `id="toggle" href="/e/ev/basic?refresh=off"`); i < 0 || j < 0 || j != i+3 {
			t.Errorf("refresh after %s: the first link is not the off switch: %.800s", tc.refresh, body)
		}
	}
	body, cookies := get("?refresh=off", "")
	if strings.Contains(body, `http-equiv="refresh"`) || !strings.Contains(body, `id="check" href="/e/ev/basic"`) || !strings.Contains(body, `href="/e/ev/basic?refresh=on"`) {
		t.Errorf("refresh off: %.800s", body)
	}
	if len(cookies) != 1 || !strings.HasPrefix(cookies[0], RefreshCookie+"=off") || !strings.Contains(strings.ToLower(cookies[0]), "httponly") {
		t.Errorf("refresh off set %q, want the %s cookie", cookies, RefreshCookie)
	}
	if body, _ := get("", RefreshCookie+"=off"); strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("the off cookie did not keep the refresh off")
	}
	for _, v := range []shopper.BasicView{{State: shopper.Granted, ClaimID: "0-c1", ClaimStatus: "pending"}, {Problem: kit.NewProblem(410, "sold_out", "no stock left")}} {
		view = v
		if body, _ := get("", ""); strings.Contains(body, `http-equiv="refresh"`) || strings.Contains(body, `id="toggle"`) {
			t.Errorf("%+v: a page with nothing to wait for refreshes: %.500s", v, body)
		}
	}
}

// TestBasicFraming: the basic page is the room without JavaScript, so
// the sale's frame_ancestors frame it exactly as they frame the room:
// nobody by default (frame-ancestors 'none' and X-Frame-Options DENY),
// the listed origins once there is a list (and no X-Frame-Options).
func TestBasicFraming(t *testing.T) {
	sale := testSale()
	pg := New(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{Sales: consoleSales{sale: sale}})
	app := fiber.New()
	app.Get("/e/ev/basic", func(c *fiber.Ctx) error {
		return pg.Basic(c, sale, shopper.BasicView{State: "waiting", Position: 9, Ahead: 8, ETA: time.Minute, Refresh: time.Second})
	})
	ancestors := func() (string, string) {
		t.Helper()
		resp, err := app.Test(httptest.NewRequest("GET", "/e/ev/basic", nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range strings.Split(resp.Header.Get("Content-Security-Policy"), ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(d), "frame-ancestors "); ok {
				return v, resp.Header.Get("X-Frame-Options")
			}
		}
		return "", resp.Header.Get("X-Frame-Options")
	}
	if got, xfo := ancestors(); got != "'none'" || xfo != "DENY" {
		t.Errorf("default: frame-ancestors %q, X-Frame-Options %q; want 'none' and DENY", got, xfo)
	}
	sale.Config.FrameAncestors = []string{"https://shop.example", "http://localhost:3000"}
	if got, xfo := ancestors(); got != "https://shop.example http://localhost:3000" || xfo != "" {
		t.Errorf("with a list: frame-ancestors %q, X-Frame-Options %q; want the list and none", got, xfo)
	}
}
