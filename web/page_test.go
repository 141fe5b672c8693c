package web

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
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
	for name, page := range map[string]string{"room": roomHTML, "room.js": string(roomJS), "console": string(consoleHTML)} {
		if m := regexp.MustCompile(`(?i:(src|href)\s*=\s*["']?(https?:)?//|@import)|url\(`).FindString(page); m != "" {
			t.Errorf("%s page refers to another origin or asset: %q", name, m)
		}
	}
	status, body, _ := getPage(t, app, "/e/ev?lang=ja", map[string]string{"Accept-Language": "de", "Cookie": langCookie + "=es"})
	if status != 200 || !strings.Contains(body, `<html lang="ja"`) || !strings.Contains(body, "列に並ぶ") {
		t.Errorf("?lang=ja: %d, want the Japanese page", status)
	}
	if _, body, _ := getPage(t, app, "/e/ev", map[string]string{"Accept-Language": "de", "Cookie": langCookie + "=es"}); !strings.Contains(body, `<html lang="es"`) {
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

// TestTemplateChecks: a template is refused, with its line, when it would
// fail or misbehave on the live page; a good one passes.
func TestTemplateChecks(t *testing.T) {
	r := newPageRenderer()
	cfg := testSale().Config
	good := "<!doctype html>\n<h1>{{.Event.Name}}</h1>\n{{if eq .State \"waiting\"}}{{.Position}} {{.ETA}}{{end}}\n{{range .Languages}}<a href=\"?lang={{.Code}}\">{{.Name}}</a>{{end}}\n{{.Runtime}}"
	if err := r.checkPage(&cfg, &event.Page{Template: good}, time.Now()); err != nil {
		t.Fatalf("good template refused: %v", err)
	}
	cases := []struct {
		name, src string
		line      int
		want      string
	}{
		{"parse error", "<p>\n{{.Event.Name}\n{{.Runtime}}", 2, "bad character"},
		{"unknown field", "<p>\n\n{{.Nope}}{{.Runtime}}", 3, "Nope"},
		{"unknown function", "{{.Runtime}}\n{{exec \"x\"}}", 2, "exec"},
		{"own script", "<p>ok</p>\n<SCRIPT src=x></script>{{.Runtime}}", 2, "<script>"},
		{"no runtime", "<p>static</p>", 0, "Runtime"},
		{"runtime twice", "{{.Runtime}}{{.Runtime}}", 0, "Runtime"},
		{"define", `{{define "x"}}a{{end}}{{.Runtime}}`, 0, "define"},
		{"template call", "{{.Runtime}}\n{{template \"page\" .}}", 2, "template"},
		{"deep range", "{{.Runtime}}{{range .T}}{{range $.T}}\n{{range $.T}}x{{end}}{{end}}{{end}}", 2, "nested"},
		{"too large", "{{.Runtime}}{{range .T}}{{range $.T}}" + strings.Repeat("x", 100) + "{{end}}{{end}}", 0, "larger"},
		{"ambiguous context", "<a href=\"{{.Runtime}}", 0, ""},
	}
	for _, tc := range cases {
		err := r.checkPage(&cfg, &event.Page{Template: tc.src}, time.Now())
		var p *kit.Problem
		if !errors.As(err, &p) || p.Status != 400 || p.Code != "bad_template" {
			t.Errorf("%s: got %v, want a 400 bad_template problem", tc.name, err)
			continue
		}
		if p.Line != tc.line || !strings.Contains(p.Detail, tc.want) {
			t.Errorf("%s: line %d %q, want line %d mentioning %q", tc.name, p.Line, p.Detail, tc.line, tc.want)
		}
	}
}

// TestPageChecks: branding and copy are checked before anything is saved.
func TestPageChecks(t *testing.T) {
	r := newPageRenderer()
	cfg := testSale().Config
	bad := map[string]event.Page{
		"colour name":     {Colors: event.Colors{Primary: "red"}},
		"colour css":      {Colors: event.Colors{Text: "#fff;background:url(x)"}},
		"http logo":       {LogoURL: "http://cdn.example/logo.png"},
		"javascript logo": {LogoURL: "javascript:alert(1)"},
		"html data logo":  {LogoURL: "data:text/html;base64,PHNjcmlwdD4="},
		"huge data logo":  {LogoURL: "data:image/png;base64," + strings.Repeat("A", event.MaxLogoDataBytes)},
		"csp in host":     {LogoURL: "https://a.example;script-src/x.png"},
		"wildcard host":   {LogoURL: "https://*.example/x.png"},
		"copy language":   {Copy: map[string]map[string]string{"fr": {"join": "Rejoindre"}}},
		"copy key":        {Copy: map[string]map[string]string{"en": {"nope": "x"}}},
		"copy too long":   {Copy: map[string]map[string]string{"en": {"join": strings.Repeat("x", event.MaxCopyRunes+1)}}},
		"name two lines":  {Name: "a\nb"},
	}
	for name, p := range bad {
		err := r.checkPage(&cfg, &p, time.Now())
		var pr *kit.Problem
		if !errors.As(err, &pr) || pr.Status != 400 {
			t.Errorf("%s: got %v, want 400", name, err)
		}
	}
	ok := event.Page{Name: "Shop", LogoURL: "data:image/png;base64,iVBORw0KGgo=", Colors: event.Colors{Primary: "#112233", Background: "#ffffff", Text: "#000000"},
		Copy: map[string]map[string]string{"ja": {"join": "並ぶ"}}}
	if err := r.checkPage(&cfg, &ok, time.Now()); err != nil {
		t.Errorf("a good page refused: %v", err)
	}
}

// TestPreviewEveryState: the built-in page renders every state in every
// language with the sample the runtime shows.
func TestPreviewEveryState(t *testing.T) {
	r := newPageRenderer()
	cfg := testSale().Config
	for _, l := range languages {
		for _, state := range previewStates {
			d := r.preview(&cfg, nil, l, state, time.Now())
			body, err := r.renderPage(nil, &d)
			if err != nil {
				t.Fatalf("%s %s: %v", l.Code, state, err)
			}
			if !strings.Contains(string(body), `data-state="`+state+`"`) || !strings.Contains(string(body), `"preview":{`) {
				t.Errorf("%s %s: the page lacks its state or sample", l.Code, state)
			}
		}
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

// BenchmarkLivePage is the cost of serving the waiting room from the
// render cache (every page load after the first per version and language).
func BenchmarkLivePage(b *testing.B) {
	r := newPageRenderer()
	sales := consoleSales{sale: testSale()}
	en, _ := langByCode("en")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		r.live(context.Background(), nil, sales, "ev", en, now, log)
	}
}

// BenchmarkRenderPage is the cost of one render (a cache miss).
func BenchmarkRenderPage(b *testing.B) {
	r := newPageRenderer()
	sale := testSale()
	en, _ := langByCode("en")
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		d := r.data(&sale.Config, nil, en, now, false)
		if _, err := r.renderPage(nil, &d); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLivePageConcurrent: many visitors at once on a cold node read the
// published page and share renders (run with -race).
func TestLivePageConcurrent(t *testing.T) {
	r := newPageRenderer()
	sale := testSale()
	sale.Config.PageVersion = 1
	store := &fakePages{pages: event.Pages{Published: &event.Page{Name: "Shop"}, Version: 1, PublishedVersion: 1}}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := time.Now()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			l := languages[i%len(languages)]
			body, _ := r.live(context.Background(), store, consoleSales{sale: sale}, "ev", l, now, log)
			if !strings.Contains(string(body), ">Shop</strong>") {
				t.Errorf("%s: the published brand is missing", l.Code)
			}
		})
	}
	wg.Wait()
}
