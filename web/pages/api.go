// Package pages serves anteroom's HTML and scripts: the waiting room of
// each sale (/e/{id}, in the visitor's language, with the sale's
// published branding or template), its message catalogs (i18n/), its
// runtime and the client library (/assets/room.js, /assets/anteroom.js and
// its types anteroom.d.ts, built from the TypeScript package js/anteroom),
// the staff console and report pages, and the staff's page routes under
// /admin/events/{id} (draft, publish, preview).
//
// It owns what a page may be: a staff template is checked before it is
// saved (page_template.go: bounded, no script of its own, every message
// key known), a page is at most 256 KB, and every page is served with a
// CSP that runs no third-party script (a captcha provider's only, for a
// sale that asks for one). It reads the node's view and the page store
// only: a live page costs no Redis call once rendered. Errors become HTTP
// in package kit.
package pages

import (
	"context"
	"log/slog"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Consumer-side interfaces: only what the handlers call.
type (
	// sales is the node's view of the sales (*sale.Snapshots).
	sales interface {
		Get(id string) (*admission.Sale, bool)
		Reload(ctx context.Context, id string) error
	}
	// PageStore keeps events' waiting-room pages; *event.Store.
	PageStore interface {
		Pages(ctx context.Context, id string) (event.Pages, error)
		PutPages(ctx context.Context, id string, p event.Pages) (event.Pages, error)
	}
)

// Deps are what the pages read and call.
//
// Required: Sales, Configs, Record, Allow and WithCaptcha. Optional:
// Pages (nil serves the built-in page only and answers the page admin
// routes 503).
type Deps struct {
	// Sales is the node's view of the sales.
	Sales sales
	// Pages keeps the events' own pages (*event.Store).
	Pages PageStore
	// Configs keeps event configurations (*event.Store): publishing
	// sets the sale's page version.
	Configs kit.ConfigStore
	// Record adds a staff action to the audit trail
	// (staffapi.API.Record).
	Record func(c *fiber.Ctx, action, ev string, before, after any)
	// Allow is the middleware of a staff route that needs role min
	// (staffapi.API.Allow).
	Allow func(min staff.Role, bootstrap bool) fiber.Handler
	// WithCaptcha adds a sale's captcha provider to a page's CSP
	// (protect.Edge.WithCaptcha).
	WithCaptcha func(ev, csp string) string
}

// Config tunes the pages.
type Config struct {
	// Timeout bounds every Redis call a request makes.
	//
	// Default: 3s
	Timeout time.Duration
	// Log receives failures of the page store.
	//
	// Default: slog.Default()
	Log *slog.Logger
	// Now is the node's clock.
	//
	// Default: time.Now
	Now func() time.Time
}

// Pages serves the pages. It is safe for concurrent use.
type Pages struct {
	deps  Deps
	cfg   Config
	now   func() time.Time
	pages *pageRenderer
}

// New returns the pages over deps, cfg defaulted. It panics if the
// embedded catalogs or room template do not load (a build defect).
func New(cfg Config, deps Deps) *Pages {
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Pages{deps: deps, cfg: cfg, now: cfg.Now, pages: newPageRenderer()}
}

// MountEvent adds the staff's page routes of one event to adm, the
// /admin/events/:id group that runs staffapi's RequireAdmin.
func (s *Pages) MountEvent(adm fiber.Router) {
	adm.Get("/page", s.deps.Allow(staff.Viewer, false), s.getPage)
	adm.Put("/page", s.deps.Allow(staff.Operator, false), s.putPageDraft)
	adm.Post("/page/publish", s.deps.Allow(staff.Operator, false), s.publishPage)
	adm.Get("/preview", s.deps.Allow(staff.Viewer, false), s.previewPage)
}

// Mount adds the pages and scripts to app.
func (s *Pages) Mount(app fiber.Router) {
	app.Get("/admin/", s.consolePage)
	app.Get("/admin/report", s.reportPage)
	app.Get("/admin/sweep", s.sweepPage)
	app.Get("/assets/anteroom.js", s.clientScript)
	app.Get("/assets/anteroom.d.ts", s.clientTypesFile)
	app.Get("/assets/room.js", s.roomScript)
	app.Get("/assets/push-sw.js", s.pushWorker)
	app.Get("/e/:id", s.page)
	app.Get("/e/:id/messages", s.messages)
}

// ctx bounds a request's calls to Redis: fasthttp does not cancel on
// client disconnect.
func (s *Pages) ctx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), s.cfg.Timeout)
}
