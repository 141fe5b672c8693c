package node

import (
	"context"
	"fmt"
	"github.com/anteroom/anteroom/attest/device"
	"github.com/anteroom/anteroom/web/shopper"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/crawler"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/door/rules"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/clock"
	"github.com/anteroom/anteroom/internal/luascript"
	"github.com/anteroom/anteroom/lifecycle"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/push"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/sale"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/telemetry"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web"
	"github.com/anteroom/anteroom/web/protect"
	"github.com/anteroom/anteroom/web/staffapi"
	"github.com/gofiber/fiber/v2"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// wiring is one node being put together on its backends. wire runs the
// steps in order; each sets the fields under its name and may read those
// of the steps before it. A step that opens something that outlives it
// pushes its release onto undo.
type wiring struct {
	ctx  context.Context // Start's
	sctx context.Context // bounds the stream setup, the clock sync and the first refresh
	cfg  Config
	back *backends
	undo cleanups

	// startTracing
	tracing *telemetry.Tracing // nil: off
	// openStreams
	js jetstream.JetStream
	// loadSecrets
	secret  []byte
	tickets *tokens.Tickets
	keys    *tokens.KeySet
	// startClock
	clk *clock.Clock
	// callers
	identity    protect.Identity
	reloadUsers func() error // nil unless users bring tokens (jwt)
	adminToken  string
	// services
	events   *event.Store
	claims   *claim.Store
	frontier *admission.Frontier
	snaps    *sale.Snapshots
	shop     *admission.Health
	refusals *report.Refusals
	reports  *report.Builder
	lc       *lifecycle.Recorder
	// rules are the door's rules, compiled once per sale version.
	rules    *rules.Engine
	push     *push.Service // nil: Web Push is off
	lists    *lists.Store
	listView *lists.Set
	ops      *ops
	svc      *claim.Service
	pub      *claim.Publisher
	issuer   *tokens.Issuer
	// verifyCrawlers
	crawlers *crawler.Verifier
	// openDoor: who may come in
	door *door.Door
	// startLimiter
	limitRDB redis.UniversalClient
	limiter  *limit.Limiter
	// opsListeners
	metrics       *metricsServer // nil: /metrics is on the main address
	pprof         *pprofServer   // nil: profiling is off
	publicMetrics http.Handler   // nil unless MetricsPublic
	// edge
	signInLinks *staff.SignInLinks // nil unless DemoSignInLinks
	app         *fiber.App
	ln          net.Listener
}

// cleanups is a stack of releases, run last first.
type cleanups []func()

// push adds a release to the stack.
func (c *cleanups) push(f func()) { *c = append(*c, f) }

// run runs the releases, last pushed first.
func (c cleanups) run() {
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
}

// wire puts a node together on back, one named step after another, then
// starts its background loops and serves HTTP. When a step fails, what the
// steps before it opened (the limiter's Redis pool, the metrics and pprof
// listeners) is released, last first; back stays open for Start to close.
func wire(ctx context.Context, cfg Config, back *backends) (n *Node, err error) {
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	w := &wiring{ctx: ctx, sctx: sctx, cfg: cfg, back: back}
	defer func() {
		if err != nil {
			w.undo.run()
		}
	}()
	for _, step := range []func() error{
		w.startTracing,
		w.openStreams,
		w.loadSecrets,
		w.startClock,
		w.callers,
		w.services,
		w.verifyCrawlers,
		w.openDoor,
		w.startLimiter,
		w.opsListeners,
		w.edge,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	n = w.node()
	n.startLoops(w)
	n.serve()
	return n, nil
}

// startTracing starts the tracer provider when Config.Tracing asks for
// one, and gives the node's Redis scripts their spans. Off, nothing is
// installed.
func (w *wiring) startTracing() error {
	t, err := telemetry.Start(w.ctx, w.cfg.Tracing)
	if err != nil || !t.Enabled() {
		return err
	}
	w.undo.push(func() { _ = t.Shutdown(w.ctx) })
	w.back.rdb.AddHook(luascript.TraceHook())
	w.tracing = t
	w.cfg.Log.Info("tracing on: OTLP traces", "endpoint", w.cfg.Tracing.Endpoint, "status_ratio", max(w.cfg.TraceStatusRatio, 0))
	return nil
}

// openStreams connects JetStream and makes sure the order and lifecycle
// streams exist.
func (w *wiring) openStreams() error {
	js, err := jetstream.New(w.back.nc, jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	var direct []claim.StreamOption
	if w.back.ns != nil { // the node's own server: no mirror can answer the fence's reads
		direct = append(direct, claim.DirectGets())
	}
	if err := claim.EnsureStream(w.sctx, js, w.cfg.StreamReplicas, direct...); err != nil {
		return err
	}
	if err := lifecycle.EnsureStream(w.sctx, js, w.cfg.StreamReplicas); err != nil {
		return err
	}
	w.js = js
	return nil
}

// loadSecrets reads (or generates in DataDir) the ticket secret and opens
// the admission token signing keys.
func (w *wiring) loadSecrets() error {
	secret, err := ticketSecret(&w.cfg)
	if err != nil {
		return err
	}
	tickets, err := tokens.NewTickets(secret)
	if err != nil {
		return err
	}
	keys, err := tokens.OpenKeyDir(w.cfg.SigningKeys)
	if err != nil {
		return err
	}
	w.secret, w.tickets, w.keys = secret, tickets, keys
	return nil
}

// startClock makes the node's clock (skewed only in a drill) and measures
// its offset to Redis TIME before anything reads it. It never fails.
func (w *wiring) startClock() error {
	w.clk = clock.New(w.cfg.ClockSkew)
	if w.cfg.ClockSkew != 0 {
		w.cfg.Log.Warn("DRILL: this node's clock is skewed by ANTEROOM_CLOCK_SKEW; never set it in production", "clock_skew", w.cfg.ClockSkew.String())
	}
	syncClock(w.sctx, w.back.rdb, w.clk, w.cfg.Log)
	return nil
}

// callers sets up who may call: the shoppers' identity and the admin token
// (read or generated in DataDir).
func (w *wiring) callers() error {
	identity, reloadUsers, err := newIdentity(&w.cfg, w.secret, w.clk.Now)
	if err != nil {
		return err
	}
	adminToken, err := adminToken(&w.cfg)
	if err != nil {
		return err
	}
	w.identity, w.reloadUsers, w.adminToken = identity, reloadUsers, adminToken
	return nil
}

// services builds the domain services over Redis and JetStream (stores,
// admission, reports, lifecycle, metrics, the claim service and the token
// issuer) and reads every sale once.
func (w *wiring) services() error {
	rdb := w.back.rdb
	w.events = event.NewStore(rdb)
	w.claims = claim.NewStore(rdb)
	if w.cfg.CaptchaSiteverifyURL != "" {
		w.cfg.Log.Warn("captcha tokens are checked by a development siteverify URL, not by the providers", "url", w.cfg.CaptchaSiteverifyURL)
	}
	w.frontier = admission.NewFrontier(rdb)
	w.snaps = sale.NewSnapshots(w.events, w.frontier, w.claims)
	w.snaps.UseClock(w.clk)
	w.shop = admission.NewHealth(rdb)
	w.refusals = report.NewRefusals(rdb)
	w.reports = &report.Builder{Configs: w.events, Tallies: w.frontier, Sales: w.snaps, Refusals: w.refusals, Passes: admission.NewPasses(w.back.rdb), JS: w.js}
	w.lc = lifecycle.NewRecorder(rdb, w.js)
	if w.cfg.PushVAPIDKey != "" {
		key, err := os.ReadFile(w.cfg.PushVAPIDKey)
		if err != nil {
			return fmt.Errorf("push: VAPID key: %w", err)
		}
		if w.push, err = push.New(rdb, push.Config{PrivateKey: string(key), Subject: w.cfg.PushSubject,
			Endpoints: push.Endpoints{Hosts: w.cfg.PushHosts, AllowHTTP: w.cfg.PushAllowHTTP}, Targets: w.cfg.targets()}); err != nil {
			return err
		}
		w.lc.WithPush(w.push.Subscribed)
		if w.cfg.PushAllowHTTP {
			w.cfg.Log.Warn("push endpoints may be http (ANTEROOM_PUSH_ALLOW_HTTP): for tests with a local push service stub only")
		}
	}
	o, err := newOps(&w.cfg, w.back, w.snaps, w.claims)
	if err != nil {
		return err
	}
	w.ops = o
	w.pub = claim.NewPublisher(w.js)
	w.svc = claim.NewService(w.claims, timedPublisher{pub: w.pub, observe: o.metrics.ObservePublish},
		claim.WithBatch(claimBatch), claim.WithStockView(bucketStockOf(w.snaps)), claim.WithStream(w.js), claim.WithClock(w.clk.Now),
		// A cancellation's signed webhook: a lifecycle event, published
		// before its order event leaves the outbox.
		claim.WithCancelNotice(func(ctx context.Context, oe claim.OrderEvent) error {
			return lifecycle.PublishCancelled(ctx, w.js, lifecycle.Cancellation{Event: oe.Event, ClaimID: oe.ClaimID, User: oe.User,
				Reason: string(oe.Reason), Restock: oe.Restock, Was: string(oe.Was), By: oe.By, At: oe.At})
		}))
	if err := w.snaps.Refresh(w.sctx); err != nil {
		w.cfg.Log.Warn("first refresh", "err", err)
	}
	// The door's lists: the deployment's hash key first (a node that
	// cannot read it cannot check a list), then every list's view.
	w.lists = lists.NewStore(rdb)
	if err := w.lists.Init(w.sctx); err != nil {
		return err
	}
	w.listView = lists.NewSet(w.lists)
	w.ops.lists = w.listView // not ready until every list is loaded once
	if err := w.listView.Refresh(w.sctx); err != nil {
		w.cfg.Log.Warn("first lists refresh: the door refuses the callers of a sale with a block list it lacks; not ready until it has every list", "err", err)
	}
	// Every admission token's Ed25519 signature is verified, as a gateway
	// verifies it with the JWKS: no key but the signing keys vouches for one.
	w.issuer = tokens.NewIssuer(w.keys, tokens.IssuerConfig{Issuer: w.cfg.Issuer, Audience: w.cfg.Audience})
	return nil
}

// listExists reports whether list name is stored: a rule's in_list may
// name only a list that exists when staff save it.
func (w *wiring) listExists(name string) bool {
	ctx, cancel := context.WithTimeout(w.ctx, 3*time.Second)
	defer cancel()
	_, err := w.lists.Get(ctx, name)
	return err == nil
}

// verifyCrawlers makes the crawler verifier (verified_crawler()), whose
// background lookups stop when a later step fails or the node closes.
func (w *wiring) verifyCrawlers() error {
	w.crawlers = crawler.New(w.cfg.crawlers())
	w.undo.push(w.crawlers.Close)
	return nil
}

// openDoor makes the node's door (package door) over its view of the
// lists (lists.Set, refreshed every tick) and its rules (rules.Engine):
// Config.DoorLists and DoorRules replace them when set.
func (w *wiring) openDoor() error {
	var l door.Lists = w.listView
	if w.cfg.DoorLists != nil {
		l = w.cfg.DoorLists
	}
	// The rules read the same lists (in_list) and this node's crawlers
	// (verified_crawler()).
	w.rules = rules.New(l, w.crawlers, rules.WithLog(w.cfg.Log))
	var r door.Rules = w.rules
	if w.cfg.DoorRules != nil {
		r = w.cfg.DoorRules
	}
	w.door = door.New(l, r)
	return nil
}

// startLimiter opens the rate limiter's own Redis pool (one that honours
// deadlines) and hands the limiter and the order lag to the metrics. The
// pool is released on a later failure; once the node runs, a loop closes
// it after Close's HTTP drain.
func (w *wiring) startLimiter() error {
	limitRDB, err := limit.ClientFor(w.back.rdb)
	if err != nil {
		return err
	}
	w.undo.push(func() { _ = limitRDB.Close() })
	if w.tracing.Enabled() {
		limitRDB.AddHook(luascript.TraceHook()) // the rate limits' scripts
	}
	w.limitRDB = limitRDB
	w.limiter = limit.New(limitRDB, w.cfg.Limiter)
	w.ops.watch(w.limiter, w.js)
	return nil
}

// opsListeners starts the metrics listener (MetricsAddr) and the pprof
// listener (PprofAddr), each when asked for. The public address serves
// /metrics only with MetricsPublic.
func (w *wiring) opsListeners() error {
	h := w.ops.metrics.Handler()
	if w.cfg.MetricsPublic {
		w.publicMetrics = h
	}
	if w.cfg.MetricsAddr != "" {
		ms, err := startMetrics(w.cfg.MetricsAddr, h)
		if err != nil {
			return err
		}
		w.undo.push(func() { _ = ms.close(w.ctx) })
		w.metrics = ms
	}
	if w.cfg.PprofAddr != "" {
		pp, err := startPprof(w.cfg.PprofAddr)
		if err != nil {
			return err
		}
		w.undo.push(func() { _ = pp.close(w.ctx) })
		w.pprof = pp
	}
	return nil
}

// edge builds the HTTP edge over the services and opens the public
// listener.
func (w *wiring) edge() error {
	cfg, back, js := &w.cfg, w.back, w.js
	refusals, reports := w.refusals, w.reports
	// The demo's one-time console links: a nil interface, and no route,
	// on every other node.
	var links staffapi.SignInLinks
	if cfg.DemoSignInLinks {
		w.signInLinks = staff.NewSignInLinks(back.rdb)
		links = w.signInLinks
	}
	// Device attestation: challenges signed by the node's secret (the
	// same on every node), Apple's pinned root unless a test names one.
	attest, err := device.New(back.rdb, device.Config{Secret: w.secret, AppleRoots: cfg.AppAttestRoots,
		PlayDecryptionKey: cfg.PlayIntegrityDecryptionKey, PlayVerificationKey: cfg.PlayIntegrityVerificationKey,
		ChallengeTTL: shopper.ChallengeTTL, Clock: w.clk.Now, Retention: cfg.Retention})
	if err != nil {
		return err
	}
	app, err := web.New(web.Config{
		AdminToken: w.adminToken, Log: cfg.Log, WebhookAllowHTTP: cfg.WebhookAllowHTTP,
		CaptchaSiteverifyURL: cfg.CaptchaSiteverifyURL, CaptchaTimeout: cfg.CaptchaTimeout, Issuer: cfg.Issuer, SigningAlgorithms: w.issuer.Algorithms(),
		AccessLog: cfg.AccessLog, SlowRequest: cfg.SlowRequest,
		TrustedProxies: cfg.TrustedProxies, MaxInFlight: cfg.MaxInFlight,
		ListUploadMax: cfg.ListUploadMaxBytes, ListMaxEntries: cfg.ListMaxEntries,
		GlobalJoin:  limit.Limit{Rate: cfg.GlobalJoinRate, Burst: cfg.GlobalJoinRate},
		GlobalClaim: limit.Limit{Rate: cfg.GlobalClaimRate, Burst: cfg.GlobalClaimRate},
		Now:         w.clk.Now, NowAt: w.clk.At, Tap: cfg.Tap,
		Tracer: w.tracing.Provider(), TraceStatusRatio: cfg.TraceStatusRatio,
		Retention: cfg.Retention,
	}, web.Deps{
		Limiter: w.limiter, Reservations: limit.NewReservations(back.rdb), EdgeSecret: w.secret,
		StaffThrottle: staff.NewThrottle(back.rdb, 0, 0), StaffSessions: staff.NewSessions(back.rdb),
		Accounts: staff.NewAccounts(back.rdb), Audit: staff.NewAudit(back.rdb), Passes: admission.NewPasses(back.rdb),
		SignInLinks: links,
		Sales:       w.snaps, Joiner: lifecycle.NewJoiner(queue.NewJoiner(back.rdb), back.rdb, wantsYourTurn(w.snaps)), Lifecycle: w.lc, Tickets: protect.NewTicketCache(w.tickets, 200_000),
		Admitter: w.issuer, Claims: w.svc, Store: w.claims,
		Configs: w.events, Pages: w.events, Identity: w.identity, JWKS: w.keys.JWKS, Ready: w.ops.ready, Rooms: w.frontier,
		Sessions: w.frontier, Health: w.shop, Push: pushStoreOf(w.push),
		Observe: w.ops.observe(), Metrics: w.publicMetrics,
		Rebuild:  claim.NewRebuilder(w.svc, js, w.events).Rebuild,
		OrderLag: func(ctx context.Context) (*claim.Lag, error) { return claim.OrderLag(ctx, js) },
		Refusals: refusals, Door: w.door, Attest: attest,
		// The door's rules: compiled at save, tried by the console.
		CheckRules: func(cfg *event.Config) error { return w.rules.Compile(cfg, w.listExists) },
		TryRules:   w.tryDoor,
		Lists:      w.lists, SyncDoor: w.lists.Sync,
		Report: func(ctx context.Context, ev string) (report.Report, error) {
			if err := refusals.Flush(ctx); err != nil { // this node's latest count too
				return report.Report{}, err
			}
			return reports.Build(ctx, ev)
		},
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	w.undo.push(func() { _ = ln.Close() })
	w.app, w.ln = app, ln
	return nil
}

// node is the Node the steps built; its loops' lifetime starts here and
// ends with Close.
func (w *wiring) node() *Node {
	lctx, stop := context.WithCancel(context.WithoutCancel(w.ctx))
	return &Node{
		cfg: w.cfg, back: w.back, app: w.app, ln: w.ln, loops: lctx, cancel: stop, serveErr: make(chan error, 1),
		ops: w.ops, metrics: w.metrics, pprof: w.pprof, tracing: w.tracing,
		AdminToken: w.adminToken, Events: w.events, Claims: w.claims, Snapshots: w.snaps, JS: w.js, Limiter: w.limiter,
		Crawlers: w.crawlers,
		Lists:    w.lists, ListView: w.listView,
		SignInLinks: w.signInLinks,
	}
}

// claimBatch is how many concurrent claims for one bucket may share one
// script call.
const claimBatch = 32

func bucketStockOf(s *sale.Snapshots) func(ev string) []int64 {
	return func(ev string) []int64 {
		if v, ok := s.Get(ev); ok {
			return v.BucketStock
		}
		return nil
	}
}

func wantsYourTurn(s *sale.Snapshots) func(ev string) bool {
	return func(ev string) bool {
		v, ok := s.Get(ev)
		return ok && v.Config.WantsYourTurn()
	}
}

// pushStoreOf is p as the web's push store: nil (Web Push off) stays a
// nil interface.
func pushStoreOf(p *push.Service) interface {
	Save(ctx context.Context, ev string, shard int, seq int64, body []byte, until, now time.Time) error
	PublicKey() string
} {
	if p == nil {
		return nil
	}
	return p
}
