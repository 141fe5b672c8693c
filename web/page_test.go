package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/pages"
	"github.com/gofiber/fiber/v2"
)

// fakePages is a page store holding one event's pages.
type fakePages struct{ pages event.Pages }

func (f *fakePages) Pages(context.Context, string) (event.Pages, error) { return f.pages, nil }
func (f *fakePages) PutPages(context.Context, string, event.Pages) (event.Pages, error) {
	return event.Pages{}, errors.New("fakePages: read only")
}

// publishedApp serves testSale with page published.
func publishedApp(t testing.TB, page, draft *event.Page, mutate func(*event.Config)) *fiber.App {
	sale := testSale()
	sale.Config.PageVersion = 2
	if mutate != nil {
		mutate(&sale.Config)
	}
	store := &fakePages{pages: event.Pages{Published: page, Draft: draft, Version: 2, PublishedVersion: 2}}
	return mustNew(t, Config{AdminToken: testAdminToken, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{Sales: consoleSales{sale: sale}, Pages: store})
}

func getPage(t *testing.T, app *fiber.App, path string, hdr map[string]string) (int, string, map[string][]string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// TestRoomPage checks what the waiting room costs and promises: one small
// document in the visitor's language, cacheable per language, calling no
// other origin, with a CSP that runs no inline script.
func TestRoomPage(t *testing.T) {
	app := testApp(t)
	for accept, lang := range map[string]string{"zh-CN,zh;q=0.9": "zh-Hans", "en-GB": "en", "ar-EG": "ar", "hi": "hi"} {
		status, body, h := getPage(t, app, "/e/ev", map[string]string{"Accept-Language": accept})
		dir := "ltr"
		if lang == "ar" {
			dir = "rtl"
		}
		if status != 200 || !strings.Contains(body, `<html lang="`+lang+`" dir="`+dir+`"`) {
			t.Errorf("Accept-Language %s: %d, want 200 with lang %s dir %s", accept, status, lang, dir)
		}
		if got := strings.Join(h["Vary"], ","); !strings.Contains(got, "Accept-Language") || !strings.Contains(got, "Cookie") {
			t.Errorf("Vary %q, want Accept-Language and Cookie", got)
		}
		csp := strings.Join(h["Content-Security-Policy"], "")
		if !strings.Contains(csp, "script-src 'self';") {
			t.Errorf("CSP %q: want script-src 'self' only", csp)
		}
		if len(body) > 40*1024 {
			t.Errorf("room page is %d bytes, want at most 40 KB (the whole transfer must stay under 50 KB)", len(body))
		}
		if regexp.MustCompile(`<script>`).MatchString(body) {
			t.Errorf("%s page has an inline script", lang)
		}
	}
	// The embedded sources themselves: pages.TestPagesSelfContained.
	status, body, _ := getPage(t, app, "/e/ev?lang=ja", map[string]string{"Accept-Language": "de", "Cookie": pages.LangCookie + "=es"})
	if status != 200 || !strings.Contains(body, `<html lang="ja"`) || !strings.Contains(body, "列に並ぶ") {
		t.Errorf("?lang=ja: %d, want the Japanese page", status)
	}
	if _, body, _ := getPage(t, app, "/e/ev", map[string]string{"Accept-Language": "de", "Cookie": pages.LangCookie + "=es"}); !strings.Contains(body, `<html lang="es"`) {
		t.Errorf("the switcher's cookie es: want the Spanish page")
	}
	resp, err := app.Test(httptest.NewRequest("GET", "/admin/", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("console page: %d, Cache-Control %q, CSP %q", resp.StatusCode, resp.Header.Get("Cache-Control"), resp.Header.Get("Content-Security-Policy"))
	}
}

// TestMessages: the switcher's catalog, with the event's copy.
func TestMessages(t *testing.T) {
	app := publishedApp(t, &event.Page{Copy: map[string]map[string]string{"de": {"join": "Anstellen!"}}}, nil, nil)
	status, body, _ := getPage(t, app, "/e/ev/messages?lang=de", nil)
	if status != 200 || !strings.Contains(body, `"join":"Anstellen!"`) || !strings.Contains(body, `"tag":"de"`) {
		t.Errorf("messages de: %d %.200s", status, body)
	}
	if status, body, _ := getPage(t, app, "/e/ev/messages?lang=ar", nil); status != 200 || !strings.Contains(body, `"dir":"rtl"`) {
		t.Errorf("messages ar: %d %.100s, want rtl", status, body)
	}
	if status, body, _ := getPage(t, app, "/e/ev/messages?lang=xx", nil); status != 400 || !strings.Contains(body, "bad_request") {
		t.Errorf("messages xx: %d %s, want 400", status, body)
	}
}

// TestBrandedLivePage: the published branding and template reach the live
// page, every value escaped, the logo's origin allowed by the CSP and
// nothing else; the draft does not.
func TestBrandedLivePage(t *testing.T) {
	page := &event.Page{Name: "Shop & Co", LogoURL: "https://cdn.shop.example/logo.png",
		Colors:   event.Colors{Primary: "#aa0033"},
		Template: `<!doctype html><html lang="{{.Lang}}" dir="{{.Dir}}"><title>{{.Event.Name}}</title><h1 id="name">{{.Event.Name}}</h1><img src="{{.Brand.LogoURL}}"><a href="?lang=de">{{index .T "join"}}</a>{{.Runtime}}</html>`}
	app := publishedApp(t, page, &event.Page{Name: "DRAFT ONLY"}, func(c *event.Config) { c.Name = `Drop <script>alert(1)</script>` })
	status, body, h := getPage(t, app, "/e/ev", map[string]string{"Accept-Language": "de"})
	if status != 200 {
		t.Fatalf("live page: %d", status)
	}
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, "Drop &lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the event name is not escaped: %.300s", body)
	}
	if !strings.Contains(body, `<img src="https://cdn.shop.example/logo.png">`) || !strings.Contains(body, "In die Warteschlange") {
		t.Errorf("the template's logo or German copy is missing: %.400s", body)
	}
	if strings.Contains(body, "DRAFT ONLY") {
		t.Errorf("the live page shows the draft")
	}
	csp := strings.Join(h["Content-Security-Policy"], "")
	if !strings.Contains(csp, "img-src data: https://cdn.shop.example;") || !strings.Contains(csp, "script-src 'self';") {
		t.Errorf("CSP %q", csp)
	}
	if !strings.Contains(body, `<script type="application/json" id="ar-page">`) || strings.Count(body, "<script") != 2 {
		t.Errorf("want exactly the runtime's two script tags: %.600s", body)
	}
}

// TestPublicEventCacheControl: the public event JSON may be cached by a
// CDN for one second, so "sold out" polls from a crowd reach no node.
func TestPublicEventCacheControl(t *testing.T) {
	app := testApp(t)
	resp, err := app.Test(httptest.NewRequest("GET", "/events/ev", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=1" {
		t.Errorf("GET /events/ev: %d, Cache-Control %q, want 200 and %q", resp.StatusCode, resp.Header.Get("Cache-Control"), "public, max-age=1")
	}
	resp, err = app.Test(httptest.NewRequest("GET", "/events/nosuch", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 404 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("unknown event: %d, Cache-Control %q, want 404 and no-store", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
}

// TestUnknownEventPage: every unknown id gets the same cached page, whose
// runtime reads the id from the address.
func TestUnknownEventPage(t *testing.T) {
	app := testApp(t)
	status, body, _ := getPage(t, app, "/e/nosuch", nil)
	if status != 200 || !strings.Contains(body, `"event":""`) {
		t.Fatalf("unknown event: %d, want 200 with no event id in the page", status)
	}
	if _, again, _ := getPage(t, app, "/e/other", nil); again != body {
		t.Errorf("two unknown ids got different pages")
	}
	if status, _, _ := getPage(t, app, "/e/Bad!", nil); status != 404 {
		t.Errorf("invalid id: %d, want 404", status)
	}
}
