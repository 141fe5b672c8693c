package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/health"
	"github.com/anteroom/anteroom/internal/clock"
	"github.com/anteroom/anteroom/internal/staff"
	"github.com/anteroom/anteroom/lifecycle"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web"
	"github.com/gofiber/fiber/v2"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// Node is one running anteroom node.
type Node struct {
	cfg      Config
	back     *backends
	app      *fiber.App
	ln       net.Listener
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	serveErr chan error
	ops      *ops
	metrics  *metricsServer  // nil: /metrics is on the main address
	pprof    *pprofServer    // nil: profiling is off
	loops    context.Context // the background loops' lifetime, ended by Close

	closeOnce sync.Once
	closeErr  error

	// AdminToken is the admin bearer token in force.
	AdminToken string
	// Events, Claims and Snapshots are exposed for commands (demo,
	// reconcile) and tests.
	Events    *event.Store
	Claims    *claim.Store
	Snapshots *admission.Snapshots
	JS        jetstream.JetStream
	// Limiter keeps the rate limits; its Degraded and Stats are for
	// metrics.
	Limiter *limit.Limiter
}

// Start connects or starts the backends, wires the services, starts the
// background loops and begins serving HTTP. Stop it with Close.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	back, err := openBackends(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	n, err := wire(ctx, cfg, back)
	if err != nil {
		back.close()
		return nil, err
	}
	return n, nil
}

func wire(ctx context.Context, cfg Config, back *backends) (*Node, error) {
	js, err := jetstream.New(back.nc, jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := claim.EnsureStream(sctx, js, cfg.StreamReplicas); err != nil {
		return nil, err
	}
	if err := lifecycle.EnsureStream(sctx, js, cfg.StreamReplicas); err != nil {
		return nil, err
	}
	secret, err := ticketSecret(&cfg)
	if err != nil {
		return nil, err
	}
	tickets, err := tokens.NewTickets(secret)
	if err != nil {
		return nil, err
	}
	keys, err := tokens.OpenKeyDir(cfg.SigningKeys)
	if err != nil {
		return nil, err
	}
	clk := clock.New(cfg.ClockSkew)
	if cfg.ClockSkew != 0 {
		cfg.Log.Warn("DRILL: this node's clock is skewed by ANTEROOM_CLOCK_SKEW; never set it in production", "clock_skew", cfg.ClockSkew.String())
	}
	syncClock(sctx, back.rdb, clk, cfg.Log)
	identity, reloadUsers, err := newIdentity(&cfg, secret, clk.Now)
	if err != nil {
		return nil, err
	}
	adminToken, err := adminToken(&cfg)
	if err != nil {
		return nil, err
	}
	events := event.NewStore(back.rdb)
	claims := claim.NewStore(back.rdb)
	if cfg.CaptchaSiteverifyURL != "" {
		cfg.Log.Warn("captcha tokens are checked by a development siteverify URL, not by the providers", "url", cfg.CaptchaSiteverifyURL)
	}
	frontier := admission.NewFrontier(back.rdb)
	snaps := admission.NewSnapshots(events, frontier, claims)
	snaps.UseClock(clk)
	shopHealth := admission.NewHealth(back.rdb)
	refusals := report.NewRefusals(back.rdb)
	reports := &report.Builder{Configs: events, Tallies: frontier, Sales: snaps, Refusals: refusals, Passes: admission.NewPasses(back.rdb), JS: js}
	lc := lifecycle.NewRecorder(back.rdb, js)
	o, err := newOps(&cfg, back, snaps, claims)
	if err != nil {
		return nil, err
	}
	svc := claim.NewService(claims, timedPublisher{pub: claim.NewPublisher(js), observe: o.metrics.ObservePublish},
		claim.WithBatch(claimBatch), claim.WithStockView(bucketStockOf(snaps)), claim.WithStream(js), claim.WithClock(clk.Now))
	if err := snaps.Refresh(sctx); err != nil {
		cfg.Log.Warn("first refresh", "err", err)
	}
	// Every admission token's Ed25519 signature is verified, as a gateway
	// verifies it with the JWKS: no key but the signing keys vouches for one.
	issuer := tokens.NewIssuer(keys, tokens.IssuerConfig{Issuer: cfg.Issuer, Audience: cfg.Audience})
	limitRDB, err := limit.ClientFor(back.rdb) // a pool of its own that honours deadlines
	if err != nil {
		return nil, err
	}
	limiter := limit.New(limitRDB, cfg.Limiter)
	o.watch(limiter, js)
	metricsHandler := o.metrics.Handler()
	var ms *metricsServer
	if cfg.MetricsAddr != "" {
		if ms, err = startMetrics(cfg.MetricsAddr, metricsHandler); err != nil {
			_ = limitRDB.Close()
			return nil, err
		}
		metricsHandler = nil // not on the public address
	}
	var pp *pprofServer
	if cfg.PprofAddr != "" {
		if pp, err = startPprof(cfg.PprofAddr); err != nil {
			_ = limitRDB.Close()
			_ = ms.close(ctx)
			return nil, err
		}
	}
	app, err := web.New(web.Config{
		AdminToken: adminToken, Log: cfg.Log, WebhookAllowHTTP: cfg.WebhookAllowHTTP,
		CaptchaSiteverifyURL: cfg.CaptchaSiteverifyURL, CaptchaTimeout: cfg.CaptchaTimeout, Issuer: cfg.Issuer, SigningAlgorithms: issuer.Algorithms(),
		AccessLog: cfg.AccessLog, SlowRequest: cfg.SlowRequest,
		TrustedProxies: cfg.TrustedProxies, MaxInFlight: cfg.MaxInFlight,
		GlobalJoin:  limit.Limit{Rate: cfg.GlobalJoinRate, Burst: cfg.GlobalJoinRate},
		GlobalClaim: limit.Limit{Rate: cfg.GlobalClaimRate, Burst: cfg.GlobalClaimRate},
		Now:         clk.Now,
	}, web.Deps{
		Limiter: limiter, Reservations: limit.NewReservations(back.rdb), EdgeSecret: secret,
		StaffThrottle: staff.NewThrottle(back.rdb, 0, 0), StaffSessions: staff.NewSessions(back.rdb),
		Accounts: staff.NewAccounts(back.rdb), Audit: staff.NewAudit(back.rdb), Passes: admission.NewPasses(back.rdb),
		Sales: snaps, Joiner: lifecycle.NewJoiner(queue.NewJoiner(back.rdb), back.rdb, wantsYourTurn(snaps)), Lifecycle: lc, Tickets: web.NewTicketCache(tickets, 200_000),
		Admitter: issuer, Claims: svc, Store: claims,
		Configs: events, Pages: events, Identity: identity, JWKS: keys.JWKS, Ready: o.ready, Rooms: frontier,
		Sessions: frontier, Health: shopHealth,
		Observe: o.observe(), Metrics: metricsHandler,
		Rebuild:  claim.NewRebuilder(svc, js, events).Rebuild,
		OrderLag: func(ctx context.Context) (*claim.Lag, error) { return claim.OrderLag(ctx, js) },
		Refusals: refusals,
		Report: func(ctx context.Context, ev string) (report.Report, error) {
			if err := refusals.Flush(ctx); err != nil { // this node's latest count too
				return report.Report{}, err
			}
			return reports.Build(ctx, ev)
		},
	})
	if err != nil {
		_ = limitRDB.Close()
		_ = ms.close(ctx)
		_ = pp.close(ctx)
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		_ = limitRDB.Close()
		_ = ms.close(ctx)
		_ = pp.close(ctx)
		return nil, fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	n := &Node{
		cfg: cfg, back: back, app: app, ln: ln, loops: lctx, cancel: stop, serveErr: make(chan error, 1), ops: o, metrics: ms, pprof: pp,
		AdminToken: adminToken, Events: events, Claims: claims, Snapshots: snaps, JS: js, Limiter: limiter,
	}
	logErr := func(what string) func(error) {
		return func(err error) { cfg.Log.Warn(what, "err", err) }
	}
	// Refusal counts reach Redis every second, and once more on Close,
	// in manual mode too (they drive nothing a test steps through).
	n.goLoop(func() { refusals.Run(lctx, time.Second, logErr("refusals")) })
	if !cfg.Manual {
		n.goLoop(func() { _ = snaps.Run(lctx, cfg.Tick, logErr("refresh")) })
		n.goLoop(func() {
			_ = svc.Run(lctx, claim.RunConfig{Sales: salesOf(snaps), OnError: logErr("outbox")})
		})
		n.goLoop(func() { lc.Run(lctx, max(cfg.Tick, 250*time.Millisecond), snaps.All, logErr("lifecycle")) })
		prober := health.NewProber(shopHealth, health.Config{AllowHTTP: cfg.WebhookAllowHTTP, OnError: logErr("shop health")})
		n.goLoop(func() { prober.Run(lctx, max(cfg.Tick, 250*time.Millisecond), snaps.All) })
		deliverer := lifecycle.NewDeliverer(js, back.rdb, events, lifecycle.DeliverConfig{AllowHTTP: cfg.WebhookAllowHTTP, OnError: logErr("webhook"), Now: clk.Now})
		n.goLoop(func() {
			if err := deliverer.Run(lctx); err != nil {
				cfg.Log.Warn("webhook deliverer stopped", "err", err)
			}
		})
		watch := newKeyWatch(staff.NewAudit(back.rdb), keys)
		n.goLoop(func() { reloadKeys(lctx, cfg.KeyReload, keys, reloadUsers, watch, logErr("keys")) })
		n.goLoop(func() { limiter.NewHeartbeat(nodeID(), 0).Run(lctx, logErr("limit heartbeat")) })
	}
	n.goLoop(func() { <-lctx.Done(); _ = limitRDB.Close() }) // after the HTTP drain in Close
	go func() { n.serveErr <- app.Listener(ln) }()
	cfg.Log.Info("anteroom node serving", "addr", ln.Addr().String(), "identity", cfg.Identity, "metrics_addr", cfg.MetricsAddr)
	if cfg.Identity == web.IdentityAnonymous && len(cfg.TrustedProxies) == 0 {
		cfg.Log.Info("per-IP join budgets count the peer address; behind a proxy or load balancer set ANTEROOM_TRUSTED_PROXIES, or every shopper shares its budget")
	}
	return n, nil
}

func (n *Node) goLoop(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// claimBatch is how many concurrent claims for one bucket may share one
// script call.
const claimBatch = 32

func bucketStockOf(s *admission.Snapshots) func(ev string) []int64 {
	return func(ev string) []int64 {
		if sale, ok := s.Get(ev); ok {
			return sale.BucketStock
		}
		return nil
	}
}

// StartWorker runs the order worker inside this node, as `anteroom worker`
// runs it in its own process, until Close.
func (n *Node) StartWorker(ctx context.Context) error {
	w, err := newWorker(ctx, &n.cfg, n.Claims, n.JS, 0)
	if err != nil {
		return err
	}
	n.goLoop(func() { _ = w.Run(n.loops) })
	return nil
}

// newWorker is the order worker of cfg's deployment; concurrency 0 is the
// worker's default.
func newWorker(ctx context.Context, cfg *Config, store *claim.Store, js jetstream.JetStream, concurrency int) (*claim.Worker, error) {
	return claim.NewWorker(ctx, store, js, claim.WorkerConfig{
		Replicas: cfg.StreamReplicas, Concurrency: concurrency,
		OnError: func(err error) { cfg.Log.Warn("order worker", "err", err) },
	})
}

func wantsYourTurn(s *admission.Snapshots) func(ev string) bool {
	return func(ev string) bool {
		sale, ok := s.Get(ev)
		return ok && sale.Config.WantsYourTurn()
	}
}

func salesOf(s *admission.Snapshots) func() []claim.Sale {
	return func() []claim.Sale {
		all := s.All()
		out := make([]claim.Sale, 0, len(all))
		for _, sale := range all {
			out = append(out, claim.Sale{ID: sale.Config.ID, Buckets: sale.Config.Buckets})
		}
		return out
	}
}

// reloadKeys picks up, every interval, key rotations made by other nodes
// or `anteroom keys` in the shared key directory, and (when users is not
// nil) the shop's rotated user keys. On error the previous keys stay.
// Each key set it serves is recorded once in the staff audit (see
// keyWatch).
func reloadKeys(ctx context.Context, every time.Duration, keys *tokens.KeySet, users func() error, watch *keyWatch, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	if err := watch.observe(ctx); err != nil {
		onErr(err)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := keys.Reload(); err != nil {
				onErr(err)
			} else if err := watch.observe(ctx); err != nil {
				onErr(err)
			}
			if users == nil {
				continue
			}
			if err := users(); err != nil {
				onErr(fmt.Errorf("user keys: %w", err))
			}
		}
	}
}

// nodeID names this process in the limiter's heartbeat set.
func nodeID() string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// URL is the node's base URL.
func (n *Node) URL() string { return baseURL(n.ln.Addr()) }

// baseURL is the http URL of a listener's address (loopback for an
// unspecified one).
func baseURL(a net.Addr) string {
	addr := a.(*net.TCPAddr)
	host := addr.IP.String()
	if addr.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return fmt.Sprintf("http://%s", net.JoinHostPort(host, fmt.Sprint(addr.Port)))
}

// Redis returns the node's Redis client.
func (n *Node) Redis() redis.UniversalClient { return n.back.rdb }

// Close drains the node: stops accepting, finishes in-flight requests
// (their claims are published and acknowledged), stops the loops, flushes
// the outbox bookkeeping, then closes the connections and embedded servers.
// Calling it again returns the first call's error and does nothing more.
func (n *Node) Close(ctx context.Context) error {
	n.closeOnce.Do(func() { n.closeErr = n.close(ctx) })
	return n.closeErr
}

func (n *Node) close(ctx context.Context) error {
	err := n.app.ShutdownWithContext(ctx)
	// Shutdown closes the listeners fasthttp has begun to serve; one that
	// Start handed over just before Close is not among them yet, and
	// would accept forever.
	if lerr := n.ln.Close(); lerr != nil && !errors.Is(lerr, net.ErrClosed) && err == nil {
		err = lerr
	}
	if merr := n.metrics.close(ctx); merr != nil && err == nil {
		err = merr
	}
	if perr := n.pprof.close(ctx); perr != nil && err == nil {
		err = perr
	}
	n.cancel()
	n.wg.Wait()
	n.back.close()
	if serr := <-n.serveErr; serr != nil && !errors.Is(serr, net.ErrClosed) && err == nil {
		err = serr
	}
	return err
}
