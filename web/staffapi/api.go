// Package staffapi is the staff's side of the edge: the admin API and the
// console's sign-in. It serves sign-in and console sessions (a signed
// cookie with a CSRF token, console_session.go), staff accounts and API
// keys, roles, the audit trail, and the event routes under
// /admin/events/{id}: create and update, pause and resume, close and
// reopen, fail open (a deadline) and end it, rebuild,
// lifecycle, the post-sale report, bypass passes, the door rules' tester,
// the sweep and cancellations (sweep.go);
// and the door's lists under /admin/lists (lists.go), whose bulk upload
// streams its body.
//
// It owns who may act as staff and what each role may do: the admin
// token is the bootstrap, accounts have roles (viewer, operator, admin),
// every admin route names the lowest role it needs (Allow), failed
// authentications are throttled per client address, and every change is
// recorded in the audit trail (Record). "Session" here is always a
// console session; the shop's checkout sessions are package shopper's.
// Errors become HTTP in package kit.
package staffapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Consumer-side interfaces: only what the handlers call.
type (
	// sales is the node's view of the sales (*sale.Snapshots).
	sales interface {
		Get(id string) (*admission.Sale, bool)
		Reload(ctx context.Context, id string) error
		All() []*admission.Sale
	}
	stock interface {
		Totals(ctx context.Context, sale claim.Sale) (claim.Totals, error)
		Hold(ctx context.Context, r claim.Restock) (*claim.Hold, error)
	}
	health interface {
		State(ctx context.Context, ev string) (admission.HealthState, error)
		Reset(ctx context.Context, ev string) error
	}
	passSigner interface {
		Sign(p tokens.Pass) (string, error)
	}
)

// Deps are the services the handlers use.
//
// Required: Sales, Configs, Store and Friction. Optional: the rest; each
// one's comment says what nil does.
type Deps struct {
	// Sales is the node's view of the sales (*sale.Snapshots).
	Sales sales
	// Configs keeps event configurations (*event.Store).
	Configs kit.ConfigStore
	// Store reads and holds stock (*claim.Store).
	Store stock
	// Friction is what the join defences amount to on this node for a
	// sale, shown in the admin view.
	Friction func(cfg *event.Config) any
	// Health keeps the shop health signals (*admission.Health); nil
	// leaves the hold out of the admin view.
	Health health
	// OrderLag reads how far the order worker trails the stream; nil (or
	// a nil Lag) leaves it out of the admin view.
	OrderLag func(ctx context.Context) (*claim.Lag, error)
	// Rebuild recomputes an event's stock and claims from the order
	// stream; nil answers 503.
	Rebuild func(ctx context.Context, ev string) (claim.Report, error)
	// Report builds an event's post-sale report; nil answers 503.
	Report func(ctx context.Context, ev string) (report.Report, error)
	// Lifecycle lists an event's recent lifecycle events
	// (*lifecycle.Recorder); nil answers an empty list.
	Lifecycle LifecycleLog
	// PassTokens signs bypass passes (*tokens.Passes) and Passes keeps
	// their records (*admission.Passes); a nil Passes answers 503.
	PassTokens passSigner
	Passes     PassStore
	// StaffThrottle counts failed admin authentications per client
	// address (*staff.Throttle in Redis, shared by every node).
	//
	// Default: a count of this node only
	StaffThrottle Throttle
	// StaffSessions is the set of signed-in console sessions
	// (*staff.Sessions in Redis: a sign-out holds on every node).
	//
	// Default: sessions of this node only
	StaffSessions ConsoleSessions
	// Accounts keeps named staff accounts and API keys (*staff.Accounts);
	// nil leaves only the admin token.
	Accounts Accounts
	// Audit records staff actions (*staff.Audit); nil records nothing.
	Audit AuditLog
	// CheckRules compiles a configuration's door rules before it is
	// saved ((*rules.Engine).Compile): its error, a bad rule naming the
	// rule and the column, refuses the save. Nil checks none.
	CheckRules func(cfg *event.Config) error
	// TryRules decides a described request to a configuration as its
	// door would at the gate, for the console's tester: block lists,
	// its rules (compiled afresh, (*rules.Engine).Try), eligibility
	// lists; the rule that decided, if one did. Nil answers 404 on the
	// tester's route.
	TryRules func(cfg *event.Config, r *door.Request) (rule string, then door.Action, matched bool, err error)
	// Lists keeps the door's block and eligibility lists (*lists.Store);
	// nil answers the list routes 503.
	Lists ListStore
	// SignInLinks spends one-time console sign-in links
	// (*staff.SignInLinks, signin_link.go); only the demo command gives
	// one.
	//
	// Default: nil, no route
	SignInLinks SignInLinks
	// SyncDoor readies the lists an event's door references before a
	// save stores it (lists.Store.Sync): an unknown list refuses the save
	// (400 naming it). nil: none.
	SyncDoor func(ctx context.Context, cfg *event.Config) error
	// Sweeps groups a sale's live claims by shared signals
	// (*claim.Store); nil answers the sweep and cancellations 503.
	Sweeps sweeper
	// Cancel cancels claims ((*claim.Service).Cancel); nil answers
	// cancellations 503.
	Cancel func(ctx context.Context, sale claim.Sale, c claim.Cancellation) ([]claim.Record, error)
}

// Config tunes the staff API.
type Config struct {
	// AdminToken authorises the admin API as a bearer token and signs
	// the console in; empty disables both.
	AdminToken string
	// WebhookAllowHTTP accepts http webhook URLs in event
	// configurations; otherwise they must be https.
	WebhookAllowHTTP bool
	// TokenClaims is true where the identity mode reads the shop's token
	// claims (jwt): a sale may then read signals from them.
	TokenClaims bool
	// PlayIntegrity is true where the node has Play Integrity keys: a
	// sale may then attest an Android app (event.CheckAttestation).
	PlayIntegrity bool
	// Timeout bounds every Redis or NATS call a request makes.
	//
	// Default: 3s
	Timeout time.Duration
	// Log receives unexpected errors of staff state.
	//
	// Default: slog.Default()
	Log *slog.Logger
	// Now is the node's clock.
	//
	// Default: time.Now
	Now func() time.Time
	// Proxies are the trusted proxies, for the client address failed
	// authentications are counted by.
	Proxies kit.Proxies
	// ListUploadMax bounds a list upload's body in bytes; a larger one
	// answers 413 too_large, unread past the limit.
	//
	// Default: DefaultListUploadMax
	ListUploadMax int64
	// ListMaxEntries bounds a list's entries (lists.LoadOptions.Max); an
	// upload over it answers 413 too_large, nothing applied.
	//
	// Default: lists.MaxEntries
	ListMaxEntries int64
	// ListTimeout bounds a list upload or export, which may carry
	// hundreds of megabytes (each must also make progress every 10 s).
	//
	// Default: 10m
	ListTimeout time.Duration
}

// DefaultListUploadMax is Config.ListUploadMax's default: 512 MiB, about
// 10 million lines of 50 bytes.
const DefaultListUploadMax = 512 << 20

// API serves the staff routes. It is safe for concurrent use.
type API struct {
	deps Deps
	cfg  Config
	now  func() time.Time
}

// New returns the staff API over deps, cfg defaulted.
func New(cfg Config, deps Deps) *API {
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ListUploadMax <= 0 {
		cfg.ListUploadMax = DefaultListUploadMax
	}
	if cfg.ListMaxEntries <= 0 {
		cfg.ListMaxEntries = lists.MaxEntries
	}
	if cfg.ListTimeout <= 0 {
		cfg.ListTimeout = 10 * time.Minute
	}
	if deps.StaffThrottle == nil || deps.StaffSessions == nil {
		local := newLocalStaff(cfg.Now)
		if deps.StaffThrottle == nil {
			deps.StaffThrottle = local
		}
		if deps.StaffSessions == nil {
			deps.StaffSessions = local
		}
	}
	return &API{deps: deps, cfg: cfg, now: cfg.Now}
}

// RequireAdmin is the middleware of the /admin/events/{id} group: staff
// credentials (bearer admin token or API key, or a console session with
// its CSRF token), or 401.
func (s *API) RequireAdmin(c *fiber.Ctx) error { return s.requireAdmin(c) }

// Allow is the middleware of a staff route that needs role min or above
// (see roles.go); bootstrap routes also take the admin token once an
// admin account exists.
func (s *API) Allow(min staff.Role, bootstrap bool) fiber.Handler { return s.allow(min, bootstrap) }

// Record adds a staff action on event ev (empty for none) to the audit
// trail, with what it changed.
func (s *API) Record(c *fiber.Ctx, action, ev string, before, after any) {
	s.record(c, action, ev, before, after)
}

// IsAdmin reports whether request c carries staff credentials of an
// operator or above.
func (s *API) IsAdmin(c *fiber.Ctx) bool { return s.isAdmin(c) }

// MountEvent adds the staff routes of one event to adm, the
// /admin/events/:id group that runs RequireAdmin.
func (s *API) MountEvent(adm fiber.Router) {
	adm.Put("/", s.allow(staff.Operator, false), s.putEvent)
	adm.Get("/", s.allow(staff.Viewer, false), s.getEvent)
	adm.Post("/pause", s.allow(staff.Operator, false), s.pauseEvent(true))
	adm.Post("/resume", s.allow(staff.Operator, false), s.pauseEvent(false))
	adm.Post("/close", s.allow(staff.Operator, false), s.closeEvent)
	adm.Post("/reopen", s.allow(staff.Operator, false), s.reopenEvent)
	adm.Put("/fail-open", s.allow(staff.Operator, false), s.failOpen)
	adm.Delete("/fail-open", s.allow(staff.Operator, false), s.endFailOpen)
	adm.Post("/rebuild", s.allow(staff.Operator, false), s.rebuildEvent)
	adm.Get("/lifecycle", s.allow(staff.Viewer, false), s.lifecycleEvents)
	adm.Get("/report", s.allow(staff.Viewer, false), s.getReport)
	adm.Get("/report.csv", s.allow(staff.Viewer, false), s.exportReport)
	adm.Post("/passes", s.allow(staff.Operator, false), s.mintPass)
	adm.Get("/passes", s.allow(staff.Viewer, false), s.listPasses)
	adm.Delete("/passes/:pass", s.allow(staff.Operator, false), s.revokePass)
	adm.Post("/door/test", s.allow(staff.Viewer, false), s.testDoor)
	adm.Get("/sweep", s.allow(staff.Operator, false), s.getSweep)
	adm.Post("/cancellations", s.allow(staff.Operator, false), s.cancelClaims)
}

// Mount adds the staff routes outside one event: accounts, keys, audit,
// console sign-in, the event list, the event defaults and the lists
// (lists.go).
func (s *API) Mount(app fiber.Router) {
	app.Get("/admin/accounts", s.allow(staff.Admin, true), s.listAccounts)
	app.Post("/admin/accounts", s.allow(staff.Admin, true), s.createAccount)
	app.Put("/admin/accounts/:name", s.allow(staff.Admin, true), s.setAccountRole)
	app.Put("/admin/accounts/:name/password", s.allow(staff.Admin, true), s.resetPassword)
	app.Delete("/admin/accounts/:name", s.allow(staff.Admin, false), s.deleteAccount)
	app.Post("/admin/accounts/:name/keys", s.allow(staff.Admin, false), s.createKey)
	app.Delete("/admin/keys/:prefix", s.allow(staff.Admin, false), s.revokeKey)
	app.Get("/admin/audit", s.allow(staff.Viewer, false), s.listAudit)
	app.Get("/admin/audit.csv", s.allow(staff.Viewer, false), s.exportAudit)

	app.Post("/admin/session", s.signIn)
	app.Get("/admin/session", s.sessionInfo)
	app.Delete("/admin/session", s.signOut)
	if s.deps.SignInLinks != nil {
		app.Get(SignInLinkPath, s.signInByLink)
	}
	app.Post("/admin/session/password", s.allow(staff.Viewer, true), s.changePassword)
	app.Delete("/admin/sessions", s.allow(staff.Admin, false), s.endAllSessions)
	app.Get("/admin/events", s.allow(staff.Viewer, false), s.listEvents)
	app.Get("/admin/defaults", s.allow(staff.Viewer, false), s.eventDefaults)
	s.mountLists(app)
}

// ctx bounds a request's calls to Redis and NATS: fasthttp does not cancel
// on client disconnect.
func (s *API) ctx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), s.cfg.Timeout)
}
