package protect

import (
	"context"
	"crypto/rand"
	"fmt"
	"hash/maphash"
	"log/slog"
	"regexp"
	"slices"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Edge protection, cheapest rejection first: the node-local entry cap
// (EntryCap), early birds (EarlyBird), node-local status limits
// (statuslimit.go), then on join invites and proofs of work (µs, no Redis)
// and on join and claim the distributed token buckets (one or two Redis
// round trips); on claim the signals (signals.go), which the claim script
// counts.

// Consumer-side interfaces of the edge limits.
type (
	// Limiter keeps the distributed token buckets; *limit.Limiter.
	Limiter interface {
		Allow(ctx context.Context, rules ...limit.Rule) limit.Decision
	}
	// Reserver binds a value to its first holder in an event (a busy
	// network's challenge, spent once); *limit.Reservations.
	Reserver interface {
		Reserve(ctx context.Context, kind, ev, value, user string, ttl time.Duration) error
	}
)

// Headers a trusted proxy may send to key the device rate limits
// (DeviceHeader), and the default headers of the device and payment
// signals (event.SignalHeader). For the rate limits X-Device-ID is
// believed only from a trusted proxy (Config.TrustedProxies): from any
// other peer it is ignored, since a client could send a new value with
// every request (signal).
const (
	DeviceHeader  = "X-Device-ID"
	PaymentHeader = "X-Payment-Fingerprint"
)

// DefaultMaxInFlight is Config.MaxInFlight's default.
const DefaultMaxInFlight = 4096

var callerValuePattern = regexp.MustCompile(`^[A-Za-z0-9._:+/=-]{1,128}$`)

// Edge is one app's edge protection. It is safe for concurrent use.
type Edge struct {
	cfg  Config
	deps Deps
	now  func() time.Time
	// clock reads a request's time (kit.Clock.Request).
	clock kit.Clock

	// signalKey derives each sale's key of signal hashes (signals.go).
	signalKey   []byte
	maxInFlight int64
	inFlight    atomic.Int64
	proxies     kit.Proxies
	status      *limit.Local
	seed        maphash.Seed
	pow         powKey
	form        formKey
	invites     *tokens.Invites
	passes      *tokens.Passes
	captcha     *captchaVerifier
	// anonymous is true when callers are anonymous visitors: the event
	// limits left at their default then add friction (friction.go).
	anonymous bool
}

// New returns the edge protection of cfg over deps. It fails on a trusted
// proxy that is neither an address nor a CIDR range.
func New(cfg Config, deps Deps) (*Edge, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Clock.Now == nil {
		cfg.Clock = kit.Clock{Now: time.Now, NowAt: func(t time.Time) time.Time { return t }}
	}
	secret := cfg.Secret
	if len(secret) < 32 {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret)
	}
	e := &Edge{cfg: cfg, deps: deps, now: cfg.Clock.Now, clock: cfg.Clock, signalKey: signalKeyOf(secret),
		maxInFlight: int64(cfg.MaxInFlight), status: limit.NewLocal(0), seed: maphash.MakeSeed(), pow: newPoWKey(secret), form: newFormKey(secret)}
	if e.maxInFlight <= 0 {
		e.maxInFlight = DefaultMaxInFlight
	}
	var bad string
	if e.proxies, bad = kit.ParseProxies(cfg.TrustedProxies); bad != "" {
		return nil, fmt.Errorf("trusted proxy %q: want an IP address or a CIDR range", bad)
	}
	var err error
	if e.invites, err = tokens.NewInvites(secret); err != nil {
		return nil, err
	}
	if e.passes, err = tokens.NewPasses(secret); err != nil {
		return nil, err
	}
	e.captcha = newCaptchaVerifier(&cfg)
	e.anonymous = anonymousIdentity(deps.Identity)
	return e, nil
}

// Proxies are the trusted proxies, parsed.
func (s *Edge) Proxies() kit.Proxies { return s.proxies }

// Invites verifies lane and invite-only invites, keyed by Config.Secret.
func (s *Edge) Invites() *tokens.Invites { return s.invites }

// Passes signs and verifies bypass passes, keyed by Config.Secret.
func (s *Edge) Passes() *tokens.Passes { return s.passes }

// Mount adds the edge's own routes: the proof-of-work challenge to ev (the
// /events/:id group) and the scripts of the proof of work and the captcha
// to app.
func (s *Edge) Mount(ev, app fiber.Router) {
	ev.Get("/challenge", s.challenge)
	app.Get("/assets/pow.js", s.powScript)
	app.Get("/assets/captcha.js", s.captchaScript)
}

// ctx bounds a request's calls to Redis and NATS: fasthttp does not cancel
// on client disconnect.
func (s *Edge) ctx(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.UserContext(), s.cfg.Timeout)
}

// EntryCap answers 503 degraded once MaxInFlight requests are in progress
// on this node: a cheap shield for the process itself. Liveness probes
// pass, so an overloaded node is not restarted for being busy.
func (s *Edge) EntryCap(c *fiber.Ctx) error {
	if c.Path() == "/healthz" {
		return c.Next()
	}
	if s.inFlight.Add(1) > s.maxInFlight {
		s.inFlight.Add(-1)
		return kit.RetryLater("degraded", "this node is at capacity; retry shortly", 1)
	}
	defer s.inFlight.Add(-1)
	return c.Next()
}

// EarlyBird refuses every request for an event before its pre-queue opens,
// without Redis: no ticket can exist yet, so none can be polled or used.
func (s *Edge) EarlyBird(c *fiber.Ctx) error {
	if p := notOpen(&kit.SaleOf(c).Config, s.clock.Request(c)); p != nil {
		return p
	}
	return c.Next()
}

// notOpen is EarlyBird's answer at now for sale cfg: 403 not_open before
// its pre-queue opens, else nil. The status handler asks it itself (one
// middleware fewer on the busiest route).
func notOpen(cfg *event.Config, now time.Time) *kit.Problem {
	if !now.Before(cfg.PrequeueOpensAt) {
		return nil
	}
	p := kit.NewProblem(fiber.StatusForbidden, "not_open", "the queue opens at "+cfg.PrequeueOpensAt.UTC().Format(time.RFC3339))
	p.RetryAfter = kit.Seconds(cfg.PrequeueOpensAt.Sub(now))
	return p
}

// Join runs join's defences for user: invite, proof of work, the
// distributed rate limits, then the captcha (a call to its provider). The proof of work and the per-IP budget
// follow the node's identity mode where staff left them at their default.
func (s *Edge) Join(c *fiber.Ctx, cfg *event.Config, user string) error {
	lim := &cfg.Limits // defaulted when the configuration was read
	now := s.now()
	if lim.InviteOnly && s.invites.Verify(c.Get(tokens.InviteHeader), cfg.ID, user, now) != nil {
		p := kit.NewProblem(fiber.StatusForbidden, "invite_required", "this sale is by invitation: send your invite for this sale and account in "+tokens.InviteHeader)
		p.Title = "Invitation required"
		return p
	}
	if cfg.PoWRequired(s.anonymous) {
		if p := s.pow.verify(c.Get(PoWHeader), cfg.ID, user, lim.PoW.Bits, now); p != nil {
			return p
		}
	}
	device, err := s.deviceKey(c, cfg, user)
	if err != nil {
		return err
	}
	budget := lim.Join
	budget.IP = cfg.JoinIPRate(s.anonymous)
	if err := s.rateLimit(c, "join", cfg.ID, budget, s.cfg.GlobalJoin, device, user); err != nil {
		return err
	}
	return s.checkCaptcha(c, cfg)
}

// Claim runs claim's rate limits for user. The limits per device,
// payment, phone and address are counted by the claim script itself, on
// the signals Signals reads (signals.go).
func (s *Edge) Claim(c *fiber.Ctx, cfg *event.Config, user string) error {
	device, err := s.deviceKey(c, cfg, user)
	if err != nil {
		return err
	}
	return s.rateLimit(c, "claim", cfg.ID, cfg.Limits.Claim, s.cfg.GlobalClaim, device, user)
}

// rateLimit checks the distributed buckets of one budget ("join",
// "claim"): global, event, the caller's IP (an IPv6 caller's /64; see
// limiterIP), device (the keyed hash of the sale's trusted device signal,
// when there is one: deviceKey) and user.
func (s *Edge) rateLimit(c *fiber.Ctx, budget, ev string, b event.Budget, global limit.Limit, device, user string) error {
	if s.deps.Limiter == nil {
		return nil
	}
	var buf [5]limit.Rule
	rules := append(buf[:0],
		limit.Rule{Budget: budget, Dim: limit.Global, Limit: global},
		limit.Rule{Budget: budget, Dim: limit.Event, Event: ev, Limit: toLimit(b.Event)},
		limit.Rule{Budget: budget, Dim: limit.User, Event: ev, Value: user, Limit: toLimit(b.User)})
	if b.IP.On() {
		rules = append(rules, limit.Rule{Budget: budget, Dim: limit.IP, Event: ev, Value: limiterIP(s.proxies.ClientIP(c)), Limit: toLimit(b.IP)})
	}
	if device != "" {
		rules = append(rules, limit.Rule{Budget: budget, Dim: limit.Device, Event: ev, Value: device, Limit: toLimit(b.Device)})
	}
	if !anyOn(rules) {
		return nil // rules that are off cost neither a deadline nor a call
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	// A copy goes to the limiter, so that buf stays on the stack for the
	// requests whose rules are all off (most: no heap copy at all).
	if d := s.deps.Limiter.Allow(ctx, slices.Clone(rules)...); !d.Allowed {
		p := kit.RateLimited(budget+" requests per "+string(d.Dim), d.RetryAfter)
		if budget == "join" && d.Dim == limit.IP && d.Refused == 1 {
			return &BusyNetwork{p} // a door rule may challenge it instead (busynet.go)
		}
		return p
	}
	return nil
}

// anyOn reports whether any rule limits anything.
func anyOn(rules []limit.Rule) bool {
	for _, r := range rules {
		if !r.Limit.Unlimited() {
			return true
		}
	}
	return false
}

func toLimit(r event.Rate) limit.Limit {
	if !r.On() {
		return limit.Limit{}
	}
	return limit.Limit{Rate: r.PerSecond, Burst: r.Burst}
}

// untrustedSignal is the answer to a claim that needs a signal from a
// caller the node cannot believe one from.
func untrustedSignal(kind, header string) *kit.Problem {
	if header == "no source" {
		return kit.NewProblem(fiber.StatusForbidden, "untrusted_signal", "this sale limits claims per "+kind+
			", and its "+kind+" signal has no trusted source (signals."+kind+")")
	}
	return kit.NewProblem(fiber.StatusForbidden, "untrusted_signal", "this sale limits claims per "+kind+
		", and "+header+" is believed only from the shop's gateway (a trusted proxy, ANTEROOM_TRUSTED_PROXIES); come through the shop's gateway")
}

// Poll refuses early birds (notOpen), then runs the status limits and
// verifies the ticket (pollTicket): shopper.Guard's Poll.
func (s *Edge) Poll(c *fiber.Ctx, cfg *event.Config, now time.Time) (tokens.Ticket, error) {
	if p := notOpen(cfg, now); p != nil {
		return tokens.Ticket{}, p
	}
	return s.pollTicket(c, cfg, now)
}
