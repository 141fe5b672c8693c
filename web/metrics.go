package web

import (
	"sync"
	"time"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"go.opentelemetry.io/otel/trace"
)

// Observe receives what the edge measures, for metrics; web knows nothing
// of Prometheus. A nil func is a no-op, so the zero value observes
// nothing. The funcs are called on the request path: they must be cheap
// and safe for concurrent use, and must not keep the strings they are
// given beyond the call unless they copy them (route and method are
// constants; event ids come from the node's view).
type Observe struct {
	// Request is called once per request, after the answer is written,
	// with the route template (/events/:id/status, never the raw path;
	// "unmatched" for paths no route knows), the method (one of a fixed
	// set, or "OTHER"), the status code and the time taken.
	Request func(route, method string, status int, d time.Duration)
	// TokenIssued is called for each admission token the node mints:
	// the queue's, a safety-net room's and a bypass pass's
	// (turnstile.Admit).
	TokenIssued func(event string)
}

// unmatched labels requests that no route template matched.
const unmatched = "unmatched"

// observe is the outermost middleware: it starts the request's span (when
// tracing, tracing.go), runs the chain, turns an error into its
// problem+json answer right away (so the status is known), then reports
// the request to Observe.Request, the access log and the span.
func (s *Server) observe(c *fiber.Ctx) error {
	start := kit.Received(c) // the instant fasthttp read the request: no clock read of our own
	var span trace.Span
	if s.tracing != nil { // off: this check is all tracing costs
		span = s.tracing.start(c)
	}
	if err := c.Next(); err != nil {
		if herr := c.App().ErrorHandler(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	d := time.Since(start)
	status := c.Response().StatusCode()
	if status >= fiber.StatusBadRequest {
		// A refusal answered by ErrorHandler, or by a route's own error
		// page (the basic page's forms: kit.Settle).
		s.countRefusal(c)
	}
	route := s.routes.template(c)
	method := methodLabel(c.Method())
	if s.deps.Observe.Request != nil {
		s.deps.Observe.Request(route, method, status, d)
	}
	s.access(c, route, method, status, d)
	if span != nil {
		s.tracing.end(c, span, route, method, status)
	}
	return nil
}

// routeTemplates tells route templates from raw paths. Built on the first
// request, when every route is registered.
type routeTemplates struct {
	once     sync.Once
	app      *fiber.App
	handlers map[string]bool // paths of handler routes
	groups   map[string]bool // paths of middleware routes (groups)
}

// template returns the template of the route that answered c: a handler
// route's path, a group's path when its middleware answered (an unknown
// event), or "unmatched" — never a raw path, which fiber hands back for a
// request that matched nothing.
func (r *routeTemplates) template(c *fiber.Ctx) string {
	r.once.Do(func() {
		r.handlers, r.groups = map[string]bool{}, map[string]bool{}
		for _, rt := range r.app.GetRoutes(true) {
			r.handlers[rt.Path] = true
		}
		for _, rt := range r.app.GetRoutes(false) {
			if !r.handlers[rt.Path] && rt.Path != "/" {
				r.groups[rt.Path] = true
			}
		}
	})
	p := c.Route().Path
	if r.handlers[p] || r.groups[p] {
		return p
	}
	return unmatched
}

// methodLabel maps a request method to a constant string: the method
// fiber returns points into a buffer reused by the next request, and
// unknown methods must not grow the label set.
func methodLabel(m string) string {
	switch m {
	case fiber.MethodGet:
		return fiber.MethodGet
	case fiber.MethodHead:
		return fiber.MethodHead
	case fiber.MethodPost:
		return fiber.MethodPost
	case fiber.MethodPut:
		return fiber.MethodPut
	case fiber.MethodDelete:
		return fiber.MethodDelete
	case fiber.MethodPatch:
		return fiber.MethodPatch
	case fiber.MethodOptions:
		return fiber.MethodOptions
	}
	return "OTHER"
}

// mountMetrics serves Deps.Metrics at GET /metrics when it is set. Keep
// the path off the public load balancer: it names every sale.
func (s *Server) mountMetrics(app *fiber.App) {
	if s.deps.Metrics == nil {
		return
	}
	h := adaptor.HTTPHandler(s.deps.Metrics)
	app.Get("/metrics", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderCacheControl, "no-store")
		return h(c)
	})
}
