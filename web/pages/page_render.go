package pages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"log/slog"
	"sync"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
)

// pageRenderer renders waiting-room pages. The live page of an event is
// rendered once per (configuration version, language, phase) and kept:
// the crowd's page loads cost a map lookup. Safe for concurrent use.
type pageRenderer struct {
	catalogs catalogs
	builtin  *template.Template

	mu    sync.Mutex
	cache map[pageKey]renderedPage
	// published holds each event's published page by its PageVersion,
	// read from the page store once per publish per node.
	published map[string]publishedPage
}

type publishedPage struct {
	version int64
	page    *event.Page
}

type pageKey struct {
	id, lang, phase, countdown string
	version                    int64
	paused, frozen             bool
}

type renderedPage struct {
	body []byte
	logo string
}

// maxCachedPages bounds the live-page cache; it is emptied when full.
const maxCachedPages = 4096

// maxPageBytes bounds a rendered page: a template that writes more fails.
const maxPageBytes = 256 * 1024

// newPageRenderer parses the embedded catalogs and the built-in page. They
// are part of the binary, so an error is a build mistake (the tests load
// them): it panics, like regexp.MustCompile.
func newPageRenderer() *pageRenderer {
	cs, err := loadCatalogs()
	if err != nil {
		panic("pages: embedded message catalogs: " + err.Error())
	}
	t, err := template.New("room").Parse(roomHTML)
	if err != nil {
		panic("pages: embedded room.html: " + err.Error())
	}
	return &pageRenderer{catalogs: cs, builtin: t, cache: map[pageKey]renderedPage{}, published: map[string]publishedPage{}}
}

// live returns the live page of event id in lang and the logo URL its CSP
// must allow. An unknown event gets the built-in page (its script says so).
// Only a render (a cache miss) of an event with a published page reads the
// page store, bounded by ctx; if that fails the built-in page is served,
// and not kept.
func (r *pageRenderer) live(ctx context.Context, store PageStore, sales sales, id string, lang language, now time.Time, log *slog.Logger) ([]byte, string) {
	sale, ok := sales.Get(id)
	if !ok {
		// One page per language for every unknown id (the runtime reads
		// the id from the address and says there is no such sale): ids
		// are the visitor's to invent, so they must not cost a render.
		key := pageKey{lang: lang.Code}
		if p, hit := r.cached(key); hit {
			return p.body, p.logo
		}
		d := r.data(&event.Config{}, nil, lang, now, false)
		body, _ := r.execute(r.builtin, &d)
		return r.keep(key, renderedPage{body: body}).body, ""
	}
	cfg := &sale.Config
	key := pageKey{id: id, lang: lang.Code, phase: string(cfg.PhaseAt(now, sale.SoldOut)), version: cfg.Version,
		paused: cfg.Paused, frozen: sale.WindowFrozen}
	key.countdown, _ = countdown(cfg, now)
	if p, hit := r.cached(key); hit {
		return p.body, p.logo
	}
	page, err := r.publishedPage(ctx, store, id, cfg.PageVersion)
	if err != nil {
		log.Warn("page store", "event", id, "err", err)
		d := r.data(cfg, nil, lang, now, sale.SoldOut)
		fairness(&d, sale)
		body, _ := r.execute(r.builtin, &d)
		return body, ""
	}
	d := r.data(cfg, page, lang, now, sale.SoldOut)
	fairness(&d, sale)
	body, err := r.renderPage(page, &d)
	if err != nil {
		// Checked on save, so this is unexpected: the built-in page
		// keeps the sale going.
		log.Error("page template", "event", id, "err", err)
		d.Brand = brandOf(nil)
		body, _ = r.execute(r.builtin, &d)
	}
	p := r.keep(key, renderedPage{body: body, logo: string(d.Brand.LogoURL)})
	return p.body, p.logo
}

// publishedPage returns event id's published page of version (a
// Config.PageVersion; 0: none), reading the store when this node has not
// seen that version yet.
func (r *pageRenderer) publishedPage(ctx context.Context, store PageStore, id string, version int64) (*event.Page, error) {
	if version == 0 || store == nil {
		return nil, nil
	}
	r.mu.Lock()
	p, ok := r.published[id]
	r.mu.Unlock()
	if ok && p.version >= version {
		return p.page, nil
	}
	pages, err := store.Pages(ctx, id)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.published) >= maxCachedPages {
		clear(r.published)
	}
	r.published[id] = publishedPage{version: pages.PublishedVersion, page: pages.Published}
	return pages.Published, nil
}

func (r *pageRenderer) cached(key pageKey) (renderedPage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.cache[key]
	return p, ok
}

func (r *pageRenderer) keep(key pageKey, p renderedPage) renderedPage {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cache) >= maxCachedPages {
		clear(r.cache)
	}
	r.cache[key] = p
	return p
}

// renderPage executes page's template, or the built-in one.
func (r *pageRenderer) renderPage(page *event.Page, d *PageData) ([]byte, error) {
	if page == nil || page.Template == "" {
		return r.execute(r.builtin, d)
	}
	t, err := compileTemplate(page.Template)
	if err != nil {
		return nil, err
	}
	return r.execute(t, d)
}

// data builds what a template sees of cfg at now, with page's branding
// and copy; the visitor's figures stay empty.
func (r *pageRenderer) data(cfg *event.Config, page *event.Page, lang language, now time.Time, soldOut bool) PageData {
	var copy map[string]string
	if page != nil {
		copy = page.Copy[lang.Code]
	}
	msgs := r.catalogs.messages(lang.Code, copy)
	d := PageData{Lang: lang.Tag, Dir: dirOf(lang), T: msgs, Brand: brandOf(page)}
	for _, l := range languages {
		d.Languages = append(d.Languages, PageLanguage{Code: l.Code, Tag: l.Tag, Name: l.Name, Current: l.Code == lang.Code})
	}
	d.Event = PageEvent{ID: cfg.ID, Name: cfg.Name, Mode: string(cfg.Mode), Paused: cfg.Paused,
		Supply: cfg.OnSale(), PerUserLimit: cfg.PerUserLimit,
		PrequeueOpensAt: cfg.PrequeueOpensAt, StartsAt: cfg.StartsAt, EndsAt: cfg.EndsAt, Closed: cfg.IsClosed()}
	if cfg.Closed != nil {
		d.Event.ClosedMessage = cfg.Closed.Message
	}
	if !cfg.StartsAt.IsZero() {
		d.Event.State = string(cfg.PhaseAt(now, soldOut))
		d.Event.WindowClosesAt = cfg.WindowEnd()
		label, until := countdown(cfg, now)
		d.Countdown = PageCountdown{Label: msgs[label], Until: until}
	}
	d.Fairness.Commitment = cfg.SeedCommitment
	d.Runtime = r.runtime(cfg.ID, lang, msgs, nil)
	return d
}

// fairness adds the revealed seed once the window has closed.
func fairness(d *PageData, sale *admission.Sale) {
	if sale.WindowFrozen {
		d.Fairness.Seed, d.Fairness.WindowSize = sale.Config.Seed, sale.Window
	}
}

// countdown picks what the page counts down to, as the runtime does: the
// message key of its label and the instant.
func countdown(cfg *event.Config, now time.Time) (string, time.Time) {
	lottery := cfg.Mode == event.Lottery
	switch {
	case now.Before(cfg.PrequeueOpensAt):
		return "opensIn", cfg.PrequeueOpensAt
	case now.Before(cfg.StartsAt) && lottery:
		return "regClosesIn", cfg.StartsAt
	case now.Before(cfg.StartsAt):
		return "startsIn", cfg.StartsAt
	case !lottery && now.Before(cfg.WindowEnd()):
		return "windowIn", cfg.WindowEnd()
	case now.Before(cfg.EndsAt):
		return "endsIn", cfg.EndsAt
	}
	return "ended", time.Time{}
}

func brandOf(page *event.Page) PageBrand {
	b := PageBrand{Name: "anteroom"}
	if page == nil {
		return b
	}
	if page.Name != "" {
		b.Name = page.Name
	}
	// Checked on save (event.Page.Validate): https or data:image only.
	b.LogoURL = template.URL(page.LogoURL)
	b.Primary, b.Background, b.Text = page.Colors.Primary, page.Colors.Background, page.Colors.Text
	d := deriveColors(page.Colors)
	b.Muted, b.Surface, b.OnPrimary = d.Muted, d.Surface, d.OnPrimary
	return b
}

// runtimeInput is the runtime's input, read from #ar-page.
type runtimeInput struct {
	Event    string            `json:"event"`
	Lang     string            `json:"lang"`
	Tag      string            `json:"tag"`
	RTL      []string          `json:"rtl"`
	Messages map[string]string `json:"messages"`
	Preview  *previewJSON      `json:"preview,omitempty"`
}

// runtime is the markup of {{.Runtime}}: the runtime's input as JSON (which
// json.Marshal escapes for HTML: no "<" survives) and the script.
func (r *pageRenderer) runtime(id string, lang language, msgs map[string]string, pv *previewJSON) template.HTML {
	in := runtimeInput{Event: id, Lang: lang.Code, Tag: lang.Tag, Messages: msgs, Preview: pv, RTL: []string{}}
	for _, l := range languages {
		if l.RTL {
			in.RTL = append(in.RTL, l.Code)
		}
	}
	b, _ := json.Marshal(in)
	return template.HTML(noscript(id, msgs) + `<script type="application/json" id="ar-page">` + string(b) + `</script>` + "\n" + `<script src="/assets/room.js"></script>`)
}

// errPageTooLarge stops a template that writes more than maxPageBytes.
var errPageTooLarge = errors.New("the page is larger than 256 KB")

type cappedBuffer struct{ bytes.Buffer }

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxPageBytes {
		return 0, errPageTooLarge
	}
	return b.Buffer.Write(p)
}

func (r *pageRenderer) execute(t *template.Template, d *PageData) ([]byte, error) {
	var buf cappedBuffer
	if err := t.Execute(&buf, d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
