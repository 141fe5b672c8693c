// Package web is anteroom's HTTP edge as one fiber app: the composition
// root of the audience packages and the plumbing they share. New maps
// Config and Deps (what internal/node wires) onto
//
//   - kit: problem+json and the one error table, request ids, the sale
//     lookup, the request clock, the staff lookup;
//   - protect: edge protection (in-flight cap, early birds, rate limits,
//     proofs of work, captchas, invites, reservations, identity modes);
//   - shopper: the public API of a sale (join, status, claim, gate,
//     safety-net rooms, pass redemption, the shop's calls), minting and
//     spending admissions through package turnstile;
//   - staffapi: the admin API and console sign-in (roles, accounts, audit);
//   - pages: the waiting room, its catalogs and assets, the console pages;
//
// and mounts them in one routes table (New), after its own: health,
// readiness, metrics (with the access log, the refusal count and the
// request's trace span, tracing.go), the
// keys (JWKS, OIDC discovery) and the HTTP contract (package openapi,
// which TestOpenAPIRoutes holds to this table). Handlers are thin: they parse and validate
// input, call the domain packages through small consumer-side interfaces,
// and return errors that kit.ErrorHandler turns into RFC 9457 problems.
package web

import (
	"context"
	"github.com/anteroom/anteroom/attest/device"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/anteroom/anteroom/web/openapi"
	"github.com/anteroom/anteroom/web/pages"
	"github.com/anteroom/anteroom/web/protect"
	"github.com/anteroom/anteroom/web/shopper"
	"github.com/anteroom/anteroom/web/staffapi"
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"go.opentelemetry.io/otel/trace"
)

// Consumer-side interfaces: only what the handlers call.
type (
	sales interface {
		Get(id string) (*admission.Sale, bool)
		Reload(ctx context.Context, id string) error
		PresentAfter(ev string, pos int64, waited time.Duration)
		Activate(ctx context.Context, ev string, pos int64, until time.Time) error
		ClaimedAfter(ev string, pos int64, waited time.Duration)
		Session(ev, jti string, pos int64)
		Held(ev string, pos int64) bool
		LateShow(ev string, pos int64)
		ShownETA(v *admission.Sale, user string, now time.Time, d admission.Decision)
		All() []*admission.Sale
	}
	joiner interface {
		Join(ctx context.Context, ev, user string, t queue.Times) (queue.Entry, error)
	}
	tickets interface {
		Sign(t tokens.Ticket) (string, error)
		Verify(raw, event string) (tokens.Ticket, error)
	}
	admitter interface {
		Issue(event, user string, pos int64, ttl time.Duration, now time.Time) (string, tokens.Admission, error)
		Verify(raw, event string, now time.Time) (tokens.Admission, error)
	}
	claimer interface {
		Claim(ctx context.Context, r claim.Request) (claim.Result, error)
		Release(ctx context.Context, ev, id, user string) (claim.Record, error)
		Cancel(ctx context.Context, sale claim.Sale, c claim.Cancellation) ([]claim.Record, error)
	}
	claimStore interface {
		Lookup(ctx context.Context, ev, id string) (claim.Record, error)
		Totals(ctx context.Context, sale claim.Sale) (claim.Totals, error)
		Hold(ctx context.Context, r claim.Restock) (*claim.Hold, error)
		Mine(ctx context.Context, sale claim.Sale, user string) ([]claim.Record, error)
		Sweep(ctx context.Context, sale claim.Sale, opt claim.SweepOptions) (claim.Sweep, error)
		Group(ctx context.Context, sale claim.Sale, dim, hash string) ([]claim.SweepClaim, error)
	}
	// rooms admits to safety-net rooms; *admission.Frontier.
	rooms interface {
		Enter(ctx context.Context, ev string, e admission.Entrance) (admission.Entered, error)
	}
	// sessions ends checkout sessions; *admission.Frontier.
	sessions interface {
		Finish(ctx context.Context, ev, jti string) (admission.Finished, error)
	}
	// healthSignals keeps the shop health signals; *admission.Health.
	healthSignals interface {
		Observe(ctx context.Context, ev string, h *event.HealthCheck, o admission.Observation) (held, changed bool, err error)
		State(ctx context.Context, ev string) (admission.HealthState, error)
		Reset(ctx context.Context, ev string) error
	}
	// pushStore keeps Web Push subscriptions; *push.Service.
	pushStore interface {
		Save(ctx context.Context, ev string, shard int, seq int64, body []byte, until, now time.Time) error
		PublicKey() string
	}
)

// Deps are the domain services the handlers use.
//
// Required: Sales, Joiner, Tickets, Admitter, Claims, Store, Configs,
// Identity, JWKS and Ready. New does not check them; a request whose
// handler reaches a nil one is answered 500 by the recover middleware.
// Tests that serve only some routes may leave the others' services nil.
//
// Optional: every field after Ready; each one's comment says what nil (or
// empty) does.
type Deps struct {
	// Sales is the node-local snapshot of every sale (*sale.Snapshots).
	Sales sales
	// Joiner hands out sequence numbers (*queue.Joiner, wrapped by lifecycle.Joiner).
	Joiner joiner
	// Tickets signs and verifies queue tickets (*tokens.Tickets, or a TicketCache over it).
	Tickets tickets
	// Admitter issues and verifies admission tokens (*tokens.Issuer),
	// through the turnstile.
	Admitter admitter
	// Claims runs claims and releases (*claim.Service).
	Claims claimer
	// Store reads claims and stock (*claim.Store).
	Store claimStore
	// Configs keeps event configurations (*event.Store).
	Configs kit.ConfigStore
	// Identity names the caller.
	Identity protect.Identity
	// JWKS returns the public key set as JSON.
	JWKS func() []byte
	// Ready reports whether Redis and NATS answer.
	Ready func(ctx context.Context) error
	// Observe receives request timings and issued tokens for metrics.
	//
	// Default: observe nothing
	Observe Observe
	// Metrics, when set, is served at GET /metrics.
	Metrics http.Handler
	// Rebuild recomputes an event's stock and claims from the order
	// stream (POST /admin/events/{id}/rebuild); nil answers 503.
	Rebuild func(ctx context.Context, ev string) (claim.Report, error)
	// OrderLag reads how far the order worker trails the stream, for the
	// admin view; nil (or a nil Lag) leaves it out.
	OrderLag func(ctx context.Context) (*claim.Lag, error)
	// Limiter keeps the distributed rate limits of join and claim
	// (*limit.Limiter); nil turns them off. Node-local limits still apply.
	Limiter protect.Limiter
	// Reservations spend a busy network's challenge once
	// (*limit.Reservations); nil answers such joins 503 degraded. (Limits
	// per device and payment are the claim script's: claim.Signal.)
	Reservations protect.Reserver
	// StaffThrottle counts failed admin authentications per client
	// address (*staff.Throttle in Redis, shared by every node).
	//
	// Default: a count of this node only
	StaffThrottle staffapi.Throttle
	// StaffSessions is the set of signed-in console sessions
	// (*staff.Sessions in Redis: a sign-out holds on every node).
	//
	// Default: sessions of this node only
	StaffSessions staffapi.ConsoleSessions
	// Accounts keeps named staff accounts and API keys (*staff.Accounts);
	// nil leaves only the admin token.
	Accounts staffapi.Accounts
	// Audit records staff actions (*staff.Audit); nil records nothing.
	Audit staffapi.AuditLog
	// SignInLinks spends the demo's one-time console sign-in links
	// (*staff.SignInLinks); nil, the default everywhere but the demo
	// command, serves no such route.
	SignInLinks staffapi.SignInLinks
	// CheckRules and TryRules compile a sale's door rules at save and
	// try them in the console's tester (*rules.Engine); nil checks none
	// and has no tester (staffapi.Deps).
	CheckRules func(cfg *event.Config) error
	TryRules   func(cfg *event.Config, r *door.Request) (rule string, then door.Action, matched bool, err error)
	// EdgeSecret keys proof-of-work challenges, invites and bypass
	// passes: the ticket
	// secret, the same on every node.
	//
	// Default: a random secret of this process (challenges and invites
	// then verify on this node only)
	EdgeSecret []byte
	// Pages keeps the events' own waiting-room pages (*event.Store); nil
	// serves the built-in page only and answers the page admin routes 503.
	Pages pages.PageStore
	// Passes keeps bypass passes' uses, revocations and counters
	// (*admission.Passes); nil answers pass minting and redemption 503.
	Passes staffapi.PassStore
	// Lifecycle lists an event's recent lifecycle events, newest first
	// (*lifecycle.Recorder); nil answers an empty list.
	Lifecycle staffapi.LifecycleLog
	// Rooms admits to safety-net rooms (*admission.Frontier); nil answers
	// their joins 503 and makes their gate send everyone to the waiting
	// page.
	Rooms rooms
	// Report builds an event's post-sale report (report.Builder.Build);
	// nil answers 503.
	Report func(ctx context.Context, ev string) (report.Report, error)
	// Refusals counts what join and claim refused, by reason, for the
	// report (*report.Refusals), the door's sunk joins ("join.sink") and
	// its rules' matches (Match); nil counts nothing.
	Refusals refusalCounter
	// Door decides who may come into a sale (package door); nil: no
	// door, everyone queues.
	Door *door.Door
	// Sessions ends checkout sessions the shop reports finished
	// (*admission.Frontier); nil answers 503.
	Sessions sessions
	// Health keeps the shop health signals (*admission.Health); nil
	// answers 503 to a push and leaves the hold out of the admin view.
	Health healthSignals
	// Push keeps shoppers' Web Push subscriptions (*push.Service); nil:
	// Web Push is off (its routes answer 404).
	Push pushStore
	// Lists keeps the door's block and eligibility lists (*lists.Store);
	// nil answers the list routes 503.
	Lists staffapi.ListStore
	// Attest is the sales' device attestation (*device.Service); nil
	// answers the attestation routes, and the joins and claims of a sale
	// that requires attestation, 503.
	Attest *device.Service
	// SyncDoor readies the lists an event's door references before its
	// save (lists.Store.Sync); nil: none.
	SyncDoor func(ctx context.Context, cfg *event.Config) error
}

// Config tunes the edge.
type Config struct {
	// WebhookAllowHTTP accepts http webhook URLs (tests, a loopback
	// relay); otherwise they must be https.
	//
	// Default: false
	WebhookAllowHTTP bool
	// AdminToken authorises the admin API as a bearer token, and signs
	// the staff console in (POST /admin/session) to a session cookie.
	// Empty disables the admin API and the console.
	AdminToken string
	// Timeout bounds every Redis or NATS call a request makes.
	//
	// Default: 3s
	Timeout time.Duration
	// Log receives unexpected errors.
	//
	// Default: slog.Default()
	Log *slog.Logger
	// Issuer is the iss of admission tokens, published at
	// /.well-known/openid-configuration; it must equal the Issuer of the
	// tokens.IssuerConfig in use. Discovery is served only for an http(s)
	// URL (the public base URL), which also fixes jwks_uri; never the
	// request's host.
	//
	// Default: anteroom
	Issuer string
	// SigningAlgorithms are the JWS algorithms of admission tokens
	// (tokens.Issuer.Algorithms), published by OIDC discovery.
	//
	// Default: ["EdDSA"]
	SigningAlgorithms []string
	// AccessLog says which requests get an access-log line: off, errors
	// (5xx answers and requests slower than SlowRequest) or all.
	//
	// Default: errors
	AccessLog AccessLog
	// SlowRequest is the duration from which a request counts as slow in
	// the access log.
	//
	// Default: 1s
	SlowRequest time.Duration
	// TrustedProxies are addresses or CIDR ranges of proxies whose
	// X-Forwarded-For names the client (see clientIP); from any other
	// peer the header is ignored. Check entries with ValidTrustedProxies.
	//
	// Default: none
	TrustedProxies []string
	// MaxInFlight caps the requests in progress on this node; more are
	// answered 503 degraded with Retry-After.
	//
	// Default: DefaultMaxInFlight
	MaxInFlight int
	// CaptchaSiteverifyURL replaces the captcha providers' siteverify
	// endpoints (https, fixed per provider) with one URL, for tests and
	// development only: a local stub server. Never set it in production.
	//
	// Default: the providers' endpoints
	CaptchaSiteverifyURL string
	// CaptchaTimeout bounds one siteverify call; a provider that does not
	// answer in time refuses the join (503 captcha_unavailable).
	//
	// Default: 3s
	CaptchaTimeout time.Duration
	// GlobalJoin and GlobalClaim are the deployment's total budgets of
	// joins and claims per second over all events and nodes.
	//
	// Default: unlimited
	GlobalJoin, GlobalClaim limit.Limit
	// Now is the node's clock: token lifetimes, sessions, proofs of work
	// and sale phases are decided by it.
	//
	// Default: time.Now
	Now func() time.Time
	// Tracer, when set, traces requests (tracing.go): a server span per
	// request but probes and assets, status polls at TraceStatusRatio,
	// W3C traceparent believed from TrustedProxies only. nil: off, no
	// span is started (package telemetry makes it).
	//
	// Default: nil
	Tracer trace.TracerProvider
	// TraceStatusRatio is the share of status polls traced when Tracer
	// is set, from 0 (none) to 1 (all).
	//
	// Default: 0
	TraceStatusRatio float64
	// Retention is how long after a sale's end its per-person keys are
	// kept (the claims' signal sets expire then).
	//
	// Default: retention.DefaultPeriod
	Retention time.Duration
	// NowAt is Now at the machine's instant t (a time.Now reading). With
	// it, a status poll reads no clock of its own: its time is NowAt of
	// the instant fasthttp received it, read once by fasthttp. Leave it
	// nil with a Now that does not follow the machine's clock (a test's
	// clock): requests then call Now.
	//
	// Default: t itself when Now is left at its default; otherwise none
	NowAt func(t time.Time) time.Time
	// ListUploadMax bounds a list upload's body in bytes (the one route
	// BodyLimit does not hold); more answers 413 too_large.
	//
	// Default: staffapi.DefaultListUploadMax
	ListUploadMax int64
	// ListMaxEntries bounds a list's entries; an upload over it answers
	// 413 too_large, nothing applied.
	//
	// Default: lists.MaxEntries
	ListMaxEntries int64
	// Tap is a middleware run first on every request, outside the
	// metrics and the access log, for tests only: internal/nodetest
	// checks each exchange against the HTTP contract with it
	// (openapi/conform). It must not change an answer.
	//
	// Default: none
	Tap fiber.Handler
}

// Server holds the handlers' dependencies.
type Server struct {
	deps Deps
	cfg  Config
	now  func() time.Time
	// clock is Now and NowAt (kit.Clock.Request).
	clock kit.Clock
	// routes labels requests with their route template.
	routes *routeTemplates
	// tracing traces requests; nil: off.
	tracing *tracing
	edge    *protect.Edge // rate limits and abuse defences
	// staff is the admin API and console sign-in, whose middleware
	// guards the page admin routes too.
	staff *staffapi.API
}

// BodyLimit is the largest request body accepted, on every route but a
// list upload (staffapi.StreamsBody), which has its own
// (Config.ListUploadMax).
const BodyLimit = 16 * 1024

// HeaderLimit bounds a request's line and headers together; larger ones
// are answered 431 too_large.
const HeaderLimit = 16 * 1024

// New returns the fiber app serving the public contract. It fails on a
// setting it cannot read (a trusted proxy that is neither an address nor a
// CIDR range).
func New(cfg Config, deps Deps) (*fiber.App, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Issuer == "" {
		cfg.Issuer = tokens.DefaultIssuer
	}
	if cfg.SigningAlgorithms == nil {
		cfg.SigningAlgorithms = []string{"EdDSA"}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
		if cfg.NowAt == nil {
			cfg.NowAt = func(t time.Time) time.Time { return t }
		}
	}
	s := &Server{deps: deps, cfg: cfg, now: cfg.Now, clock: kit.Clock{Now: cfg.Now, NowAt: cfg.NowAt}}
	edge, err := protect.New(protect.Config{Secret: deps.EdgeSecret, MaxInFlight: cfg.MaxInFlight, TrustedProxies: cfg.TrustedProxies,
		GlobalJoin: cfg.GlobalJoin, GlobalClaim: cfg.GlobalClaim,
		CaptchaSiteverifyURL: cfg.CaptchaSiteverifyURL, CaptchaTimeout: cfg.CaptchaTimeout,
		Timeout: cfg.Timeout, Log: cfg.Log, Clock: s.clock,
	}, protect.Deps{Identity: deps.Identity, Tickets: deps.Tickets, Sales: deps.Sales, Limiter: deps.Limiter, Reservations: deps.Reservations})
	if err != nil {
		return nil, err
	}
	s.edge = edge
	s.tracing = newTracing(cfg, edge.Proxies())
	_, tokenClaims := deps.Identity.(interface {
		UserClaims(c *fiber.Ctx, names []string) (string, map[string][]string, error)
	})
	s.staff = staffapi.New(staffapi.Config{AdminToken: cfg.AdminToken, WebhookAllowHTTP: cfg.WebhookAllowHTTP, TokenClaims: tokenClaims,
		PlayIntegrity: deps.Attest != nil && deps.Attest.PlayKeys(),
		Timeout:       cfg.Timeout, Log: cfg.Log, Now: cfg.Now, Proxies: edge.Proxies(),
		ListUploadMax: cfg.ListUploadMax, ListMaxEntries: cfg.ListMaxEntries}, staffapi.Deps{
		Sales: deps.Sales, Configs: deps.Configs, Store: deps.Store,
		Friction: func(cfg *event.Config) any { return edge.FrictionOf(cfg) },
		Health:   deps.Health, OrderLag: deps.OrderLag, Rebuild: deps.Rebuild, Report: deps.Report,
		Lifecycle: deps.Lifecycle, PassTokens: edge.Passes(), Passes: deps.Passes,
		StaffThrottle: deps.StaffThrottle, StaffSessions: deps.StaffSessions, Accounts: deps.Accounts, Audit: deps.Audit,
		SignInLinks: deps.SignInLinks,
		CheckRules:  deps.CheckRules, TryRules: deps.TryRules,
		Lists: deps.Lists, SyncDoor: deps.SyncDoor,
		Sweeps: deps.Store, Cancel: cancelOf(deps.Claims),
	})
	pg := pages.New(pages.Config{Timeout: cfg.Timeout, Log: cfg.Log, Now: cfg.Now}, pages.Deps{
		Sales: deps.Sales, Pages: deps.Pages, Configs: deps.Configs,
		Record: s.staff.Record, Allow: s.staff.Allow, WithCaptcha: edge.WithCaptcha,
	})
	shopDeps := shopper.Deps{
		Sales: deps.Sales, Joiner: deps.Joiner, Tickets: deps.Tickets,
		// Every admission is minted and spent through the turnstile.
		Turnstile: turnstile.New(deps.Admitter, deps.Sales, deps.Observe.TokenIssued),
		Claims:    deps.Claims, Store: deps.Store, Identity: deps.Identity,
		Guard: edge, IsAdmin: s.staff.IsAdmin, Record: s.staff.Record,
		Invites: edge.Invites(), PassTokens: edge.Passes(), Passes: deps.Passes,
		Rooms: deps.Rooms, Sessions: deps.Sessions, Health: deps.Health, Push: deps.Push,
		Basic: pg, Forms: edge, // the basic page (no JavaScript)
		Door: deps.Door, Proxies: edge.Proxies(), Refusals: deps.Refusals,
	}
	if deps.Attest != nil { // a nil *device.Service must stay a nil interface
		shopDeps.Attest = deps.Attest
	}
	shop := shopper.New(shopper.Config{Timeout: cfg.Timeout, Log: cfg.Log, Clock: s.clock, Retention: cfg.Retention}, shopDeps)
	app := fiber.New(FiberConfig(cfg.Log, cfg.TrustedProxies))
	if cfg.Tap != nil {
		app.Use(cfg.Tap)
	}
	s.instrument(app) // outermost: metrics and access log see every answer
	app.Use(recover.New())
	app.Use(kit.AssignRequestIDs(edge.Proxies()))
	app.Use(limitBody) // before anything may answer without reading the body
	app.Use(edge.EntryCap)

	// The routes table. Within a group fiber tries routes in order:
	// shopper mounts the status poll first, most of the traffic.
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	app.Get("/readyz", s.ready)
	s.mountMetrics(app)
	app.Get(JWKSPath, s.jwks)
	app.Get("/.well-known/openid-configuration", s.openIDConfiguration)
	app.Get(openapi.Path, openapi.Serve) // the HTTP contract of this table

	// /events/:id: the public API (status, event, join, claim, claims,
	// gate, release, shop calls), then the proof-of-work challenge; the
	// edge's scripts under /assets.
	loadSale := kit.LoadSale(func(id string) (*admission.Sale, bool) { return s.deps.Sales.Get(id) })
	ev := app.Group("/events/:id", loadSale)
	shop.Mount(ev, edge.EarlyBird)
	// /e/:id/basic: the waiting room without JavaScript, its join and
	// claim forms, answering errors as pages.
	shop.MountBasic(app, loadSale, edge.EarlyBird)
	edge.Mount(ev, app)

	// /admin/events/:id: staff credentials once for the group, then each
	// route's role (event, pause, resume, rebuild, lifecycle, report,
	// passes; page, publish, preview).
	adm := app.Group("/admin/events/:id", s.staff.RequireAdmin)
	s.staff.MountEvent(adm)
	pg.MountEvent(adm)
	// /admin/accounts, keys, audit, session(s), events; then the pages:
	// /admin/, /admin/report, /assets/room.js and anteroom.js, /e/:id.
	s.staff.Mount(app)
	pg.Mount(app)
	app.Use(func(c *fiber.Ctx) error { return fiber.ErrNotFound })
	return app, nil
}

// ctx bounds a request's calls to Redis and NATS: fasthttp does not cancel
// on client disconnect.
func (s *Server) ctx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), s.cfg.Timeout)
}

// FiberConfig is the fiber configuration of the edge: limits, timeouts,
// the problem+json error handler logging to log, and the proxies whose
// forwarding headers are believed. bench/ceiling runs its constant handler
// on the same configuration, so the ceiling measures the same stack.
//
// Request bodies are streamed to the handlers (body.go): an app on this
// configuration that reads bodies must hold them to BodyLimit itself, as
// New does with limitBody; fasthttp's own limit bounds only what it reads
// ahead (at most 8 KB).
func FiberConfig(log *slog.Logger, trustedProxies []string) fiber.Config {
	return fiber.Config{
		AppName:           "anteroom",
		BodyLimit:         BodyLimit,
		StreamRequestBody: true, // see body.go: limitBody holds the limit
		// Multipart forms are parsed from the body once it is read and
		// held to BodyLimit, never ahead of it.
		DisablePreParseMultipartForm: true,
		DisableStartupMessage:        true,
		ErrorHandler:                 kit.ErrorHandler(log),
		ReadTimeout:                  10 * time.Second,
		WriteTimeout:                 10 * time.Second,
		IdleTimeout:                  60 * time.Second,
		// Headers up to 16 KB: a shop's user token (up to 8 KB, RS256)
		// plus the cookies a browser sends on the shop's domain. The
		// token verifiers bound their own input below that.
		ReadBufferSize: HeaderLimit,
		// X-Forwarded-Proto and the host are believed from these
		// proxies only; the client IP is read by clientIP.
		EnableTrustedProxyCheck: true,
		TrustedProxies:          trustedProxies,
	}
}

func (s *Server) ready(c *fiber.Ctx) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.deps.Ready(ctx); err != nil {
		s.cfg.Log.Warn("not ready", "request_id", kit.RequestID(c), "err", err)
		return kit.RetryLater("degraded", "a backing service is not answering", 1)
	}
	return c.JSON(fiber.Map{"status": "ready"})
}

func (s *Server) jwks(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/jwk-set+json")
	c.Set(fiber.HeaderCacheControl, "public, max-age="+strconv.Itoa(int(JWKSMaxAge/time.Second)))
	return c.Send(s.deps.JWKS())
}

// ValidTrustedProxies returns an error naming the first entry of list that
// is neither an IP address nor a CIDR range (Config.TrustedProxies).
func ValidTrustedProxies(list []string) error { return kit.ValidTrustedProxies(list) }

// cancelOf is claims' Cancel, or nil without claims (a test's partial
// node).
func cancelOf(claims claimer) func(ctx context.Context, sale claim.Sale, c claim.Cancellation) ([]claim.Record, error) {
	if claims == nil {
		return nil
	}
	return claims.Cancel
}
