// Package shopper is the public API of a sale, for its shoppers (browsers
// and apps) and for the shop behind it: the public event, join, status,
// claim, the caller's claims and releases, the proxy gate, safety-net
// rooms, bypass-pass redemption, and the shop's signed calls (finished
// checkout sessions, health).
//
// It owns the shopper's side of the rules and nothing more: what a join,
// a status poll and a claim answer. Every admission it hands out or spends
// goes through package turnstile (who may claim, whole, is written
// there); the edge defences in front of join, status and claim (early
// birds, rate limits, proofs of work, captchas, invites, device and
// payment reservations) are its Guard's; errors become HTTP in package
// kit. Handlers take the node's clock and bound every Redis or NATS call
// with Config.Timeout.
package shopper

import (
	"context"
	"github.com/anteroom/anteroom/retention"
	"log/slog"
	"runtime"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Consumer-side interfaces: only what the handlers call.
type (
	// sales is the node's view of the sales (*sale.Snapshots).
	sales interface {
		Held(ev string, pos int64) bool
		LateShow(ev string, pos int64)
		// ShownETA keeps the answer for the ETA's error, if user is
		// in the sample (no Redis).
		ShownETA(v *admission.Sale, user string, now time.Time, d admission.Decision)
	}
	joiner interface {
		Join(ctx context.Context, ev, user string, t queue.Times) (queue.Entry, error)
	}
	ticketSigner interface {
		Sign(t tokens.Ticket) (string, error)
	}
	claimer interface {
		Claim(ctx context.Context, r claim.Request) (claim.Result, error)
		Release(ctx context.Context, ev, id, user string) (claim.Record, error)
	}
	claimStore interface {
		Lookup(ctx context.Context, ev, id string) (claim.Record, error)
		Mine(ctx context.Context, sale claim.Sale, user string) ([]claim.Record, error)
	}
	// identity names the caller (protect.Identity).
	identity interface {
		User(c *fiber.Ctx, mint bool) (string, error)
	}
	// laneInvites reads the lane of a signed invite (*tokens.Invites).
	laneInvites interface {
		VerifyLane(raw, ev, user string, now time.Time) (string, error)
	}
)

// Guard is the edge protection in front of join, claim and status: each
// method answers nil (or the verified ticket) to let the request on, or
// the error to answer it with.
type Guard interface {
	// Join runs join's defences for user: invite, proof of work, rate
	// limits, captcha.
	Join(c *fiber.Ctx, cfg *event.Config, user string) error
	// JoinBusy runs the defences of a join Join refused for its per-IP
	// budget alone, which a door rule challenges as a busy network
	// (busynet.go): the challenge, spent once, then a per-IP ceiling of
	// its own and the shared budgets.
	JoinBusy(c *fiber.Ctx, cfg *event.Config, user string) error
	// Claim runs claim's rate limits.
	Claim(c *fiber.Ctx, cfg *event.Config, user string) error
	// Signals reads the signals the sale limits (device, payment, phone,
	// address) from their trusted sources, as keyed hashes for the claim
	// script; a missing, forged or untrusted one is the error to answer.
	Signals(c *fiber.Ctx, cfg *event.Config, user string) ([]claim.Signal, error)
	// Poll refuses an early bird, runs the node-local status limits and
	// returns the poll's verified queue ticket. It must not allocate on
	// the poll of a waiting user (the status hot path).
	Poll(c *fiber.Ctx, cfg *event.Config, now time.Time) (tokens.Ticket, error)
}

// Deps are the services the handlers use.
//
// Required: Sales, Joiner, Tickets, Turnstile, Claims, Store, Identity,
// Guard, IsAdmin and Record. Optional: the rest; each one's comment says what nil
// does.
type Deps struct {
	// Sales is the node's view of the sales (*sale.Snapshots).
	Sales sales
	// Joiner hands out sequence numbers (*queue.Joiner, wrapped by
	// lifecycle.Joiner).
	Joiner joiner
	// Tickets signs queue tickets (*tokens.Tickets, or a protect.TicketCache).
	Tickets ticketSigner
	// Turnstile mints and spends admissions.
	Turnstile *turnstile.Turnstile
	// Claims runs claims and releases (*claim.Service).
	Claims claimer
	// Store reads claims (*claim.Store).
	Store claimStore
	// Identity names the caller.
	Identity identity
	// Guard is the edge protection.
	Guard Guard
	// IsAdmin reports whether the request carries staff credentials of
	// an operator or above, who may read and release anyone's claims.
	IsAdmin func(c *fiber.Ctx) bool
	// Record adds a staff action to the audit trail (staffapi.API.Record):
	// a staff release of a claim is one. Required with IsAdmin.
	Record func(c *fiber.Ctx, action, ev string, before, after any)
	// Invites reads lane invites (*tokens.Invites); nil ignores them.
	Invites laneInvites
	// PassTokens verifies bypass passes (*tokens.Passes) and Passes
	// spends their uses (*admission.Passes); a nil Passes answers a pass
	// redemption 503.
	PassTokens passVerifier
	Passes     passRedeemer
	// Rooms admits to safety-net rooms (*admission.Frontier); nil answers
	// their joins 503 and makes their gate send everyone to the waiting
	// page.
	Rooms rooms
	// Sessions ends checkout sessions the shop reports finished
	// (*admission.Frontier); nil answers 503.
	Sessions sessions
	// Health keeps the shop health signals (*admission.Health); nil
	// answers 503 to a push.
	Health healthSignals
	// Basic renders the basic page (*pages.Pages) and Forms checks its
	// form posts (*protect.Edge); both are needed by MountBasic only.
	Basic BasicRenderer
	Forms forms
	// Push keeps shoppers' Web Push subscriptions (*push.Service); nil:
	// Web Push is off on this node (404).
	Push pushStore
	// Door decides who may come in (doorstep.go); nil: no door, everyone
	// queues.
	Door *door.Door
	// Proxies are the trusted proxies, by which the door reads the
	// client's address (kit.Proxies.ClientAddr); nil: the peer's.
	Proxies kit.Proxies
	// Attest checks the device attestation of a sale that requires it
	// (*device.Service, attest.go); nil answers the attestation routes,
	// and the joins and claims of such a sale, 503.
	Attest attester
	// Refusals counts the door's sunk joins and its rules' matches for
	// the report (*report.Refusals: reason "join.sink", Match; see
	// doorcount.go); nil counts nothing.
	Refusals doorCounter
}

// Config tunes the handlers.
type Config struct {
	// Timeout bounds every Redis or NATS call a request makes.
	//
	// Default: 3s
	Timeout time.Duration
	// Log receives what a handler logs (a refusal not counted, a gate
	// that could not admit).
	//
	// Default: slog.Default()
	Log *slog.Logger
	// Clock is the node's clock.
	//
	// Default: time.Now, requests at the instant fasthttp received them
	Clock kit.Clock
	// Retention is how long after a sale's end its per-person keys are
	// kept: a claim's signal sets expire then.
	//
	// Default: retention.DefaultPeriod
	Retention time.Duration
}

// API serves the public routes of a sale. It is safe for concurrent use.
type API struct {
	deps  Deps
	cfg   Config
	now   func() time.Time
	clock kit.Clock
	// pace is how long the join script takes: a sunk join waits as long.
	pace joinPace
	// registering bounds the App Attest registrations verified at once
	// (attest.go): each checks a certificate chain, about a millisecond
	// of CPU, and challenges cost an attacker nothing.
	registering chan struct{}
}

// New returns the API over deps, cfg defaulted.
func New(cfg Config, deps Deps) *API {
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = retention.DefaultPeriod
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Clock.Now == nil {
		cfg.Clock = kit.Clock{Now: time.Now, NowAt: func(t time.Time) time.Time { return t }}
	}
	if deps.Invites == nil {
		deps.Invites = noInvites{}
	}
	return &API{deps: deps, cfg: cfg, now: cfg.Clock.Now, clock: cfg.Clock, registering: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2))}
}

// Mount adds the routes under /events/:id to ev, whose middleware has
// loaded the sale (kit.LoadSale). earlyBird refuses requests before the
// pre-queue opens; join and claim run it, status checks the same itself
// (Guard.Poll).
func (s *API) Mount(ev fiber.Router, earlyBird fiber.Handler) {
	// Status first: fiber tries a group's routes in order, and the status
	// polls of waiting users are most of the traffic.
	ev.Get("/status", s.status)
	ev.Get("/", s.publicEvent)
	ev.Post("/join", earlyBird, s.open, s.join) // early birds never reach Redis; a closed room lets nobody in (door.go)
	ev.Post("/claim", earlyBird, s.claim)
	ev.Get("/claims/:claim_id", s.lookupClaim)
	ev.Get("/claims", s.listClaims)
	ev.Get("/gate", s.gate)
	ev.Post("/claims/:claim_id/release", s.releaseClaim)
	ev.Post("/sessions/:jti/finished", s.finishSession) // signed by the shop (shop.go)
	ev.Post("/health", s.pushHealth)
	ev.Get("/push", s.pushKey)
	ev.Post("/push", s.pushSubscribe)
	ev.Post("/attest/challenge", s.attestChallenge) // device attestation (attest.go)
	ev.Post("/attest/apple", s.attestApple)
}

// ctx bounds a request's calls to Redis and NATS: fasthttp does not cancel
// on client disconnect.
func (s *API) ctx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), s.cfg.Timeout)
}

// noInvites is Deps.Invites when nil: no invite verifies.
type noInvites struct{}

func (noInvites) VerifyLane(string, string, string, time.Time) (string, error) {
	return "", tokens.ErrInviteInvalid
}
