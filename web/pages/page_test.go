package pages

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
)

// TestPagesSelfContained: the embedded room page, its runtime and the
// console refer to no other origin or asset (moved from web's
// TestRoomPage, which serves them).
func TestPagesSelfContained(t *testing.T) {
	for name, page := range map[string]string{"room": roomHTML, "room.js": string(roomJS), "console": string(consoleHTML)} {
		if m := regexp.MustCompile(`(?i:(src|href)\s*=\s*["']?(https?:)?//|@import)|url\(`).FindString(page); m != "" {
			t.Errorf("%s page refers to another origin or asset: %q", name, m)
		}
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
			want := state
			if state == "room_closed" {
				want = "closed" // what status answers in a room staff closed
			}
			if !strings.Contains(string(body), `data-state="`+want+`"`) || !strings.Contains(string(body), `"preview":{`) {
				t.Errorf("%s %s: the page lacks its state or sample", l.Code, state)
			}
		}
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

// TestPageContrast: brand colours whose contrast falls short of WCAG 2.2
// AA are refused with a 400 naming the pair and its ratio; the colours
// the page derives from a brand that passes keep their own contrast.
func TestPageContrast(t *testing.T) {
	r := newPageRenderer()
	cfg := testSale().Config
	err := r.checkPage(&cfg, &event.Page{Colors: event.Colors{Text: "#999999", Background: "#ffffff"}}, time.Now())
	var p *kit.Problem
	if !errors.As(err, &p) || p.Status != 400 || !strings.Contains(p.Detail, "colors.text #999999 on colors.background #ffffff has a contrast ratio of 2.84:1") {
		t.Errorf("grey on white: %v, want a 400 naming the pair and its ratio", err)
	}
	for _, c := range []event.Colors{
		{},
		{Primary: "#ffd166", Background: "#14161a", Text: "#f2f2f2"},
		{Primary: "#8a1538", Background: "#fffaf3", Text: "#222222"},
		{Text: "#767676"},                        // just 4.5:1: muted text is the text colour
		{Primary: "#949494"},                     // white on it falls short: black labels
		{Background: "#000000", Text: "#ffffff"}, // white on black: the surface a touch lighter
	} {
		if cp := c.CheckContrast(); cp != nil {
			t.Fatalf("%+v: %s", c, cp)
		}
		d, e := deriveColors(c), c.Effective()
		if c == (event.Colors{}) {
			if d != (derivedColors{}) {
				t.Errorf("no brand colours: derived %+v, want none", d)
			}
			continue
		}
		for _, pair := range [][2]string{{d.Muted, e.Background}, {e.Text, d.Surface}, {d.OnPrimary, e.Primary}} {
			if got := event.Contrast(pair[0], pair[1]); got < event.MinTextContrast {
				t.Errorf("%+v: %s on %s is %.2f:1, want at least 4.5:1 (derived %+v)", c, pair[0], pair[1], got, d)
			}
		}
	}
}
