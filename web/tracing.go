package web

import (
	"math/rand/v2"
	"strings"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/anteroom/anteroom/web/openapi"
	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Request tracing (Config.Tracer), run by observe, the outermost
// middleware. Each traced request gets a server span named "METHOD
// route" (the route template, never the raw path), in the request's user
// context, so the Redis scripts and the JetStream publish it causes are
// its children. Off (no Tracer), observe does one nil check per request.
//
//   - Status polls (GET /events/{id}/status, most of a sale's traffic,
//     and the basic page's refresh) are traced at the share
//     Config.TraceStatusRatio, chosen before anything else is done,
//     whatever an incoming traceparent says: a proxy that traces every
//     request must not make every poll a span. A poll not chosen costs
//     a path check and one random number; none adds a Redis call.
//   - Probes, metrics, keys, the contract and static assets are never
//     traced (untraced).
//   - Every other request is traced: join, claim, claims, release, the
//     admin API, pages.
//
// A W3C traceparent (and tracestate) is believed only when the peer is a
// trusted proxy (Config.TrustedProxies): the span then joins the proxy's
// trace, and the sampler follows its sampled flag. From any other peer
// the headers are ignored and the request starts a trace of its own, so
// no client can choose a trace id, force sampling, or write into another
// request's trace.

// tracerName is the instrumentation scope of the edge's spans.
const tracerName = "github.com/anteroom/anteroom/web"

// tracing traces requests; nil is off.
type tracing struct {
	tracer  trace.Tracer
	proxies kit.Proxies
	// statusRatio is the share of status polls traced, 0 to 1.
	statusRatio float64
	prop        propagation.TraceContext
}

// newTracing returns the tracing of cfg, or nil when it has no Tracer.
func newTracing(cfg Config, proxies kit.Proxies) *tracing {
	if cfg.Tracer == nil {
		return nil
	}
	return &tracing{tracer: cfg.Tracer.Tracer(tracerName), proxies: proxies, statusRatio: min(max(cfg.TraceStatusRatio, 0), 1)}
}

// start starts c's server span and puts it in c's user context, or
// returns nil for a request that is not traced.
func (t *tracing) start(c *fiber.Ctx) trace.Span {
	path := c.Path()
	if untraced(path) {
		return nil
	}
	if isStatusPoll(c, path) && !(rand.Float64() < t.statusRatio) {
		return nil
	}
	ctx := c.UserContext()
	if t.proxies.TrustsPeer(c) {
		ctx = t.prop.Extract(ctx, headers{c})
	}
	method := methodLabel(c.Method())
	ctx, span := t.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("http.request.method", method),
		attribute.String("url.path", strings.Clone(path)),
		attribute.String("client.address", t.proxies.ClientIP(c)),
	))
	c.SetUserContext(ctx)
	return span
}

// end names span after the route that answered, records the answer and
// ends it. A 5xx answer is an error; 4xx answers are the client's.
func (t *tracing) end(c *fiber.Ctx, span trace.Span, route, method string, status int) {
	span.SetName(method + " " + route)
	span.SetAttributes(
		attribute.String("http.route", route),
		attribute.Int("http.response.status_code", status),
		attribute.String("anteroom.request_id", kit.RequestID(c)),
	)
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// untraced reports whether requests for path are never traced: probes,
// metrics, keys and discovery, the contract, static assets.
func untraced(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/metrics":
		return true
	}
	return path == openapi.Path || strings.HasPrefix(path, "/.well-known/") || strings.HasPrefix(path, "/assets/")
}

// isStatusPoll reports whether c is a status poll: GET
// /events/{id}/status, or the basic page's refresh, GET /e/{id}/basic.
// Read from the raw path: routing has not run yet.
func isStatusPoll(c *fiber.Ctx, path string) bool {
	return (strings.HasPrefix(path, "/events/") && strings.HasSuffix(path, "/status") ||
		strings.HasPrefix(path, "/e/") && strings.HasSuffix(path, "/basic")) && c.Method() == fiber.MethodGet
}

// headers reads a request's headers for the W3C propagator. Values are
// copied: fasthttp reuses their buffers after the request.
type headers struct{ c *fiber.Ctx }

// Get returns the header key, copied.
func (h headers) Get(key string) string { return strings.Clone(h.c.Get(key)) }

// Set does nothing: the edge never writes propagation headers.
func (h headers) Set(string, string) {}

// Keys lists the fields the propagator reads.
func (h headers) Keys() []string { return []string{"traceparent", "tracestate"} }
