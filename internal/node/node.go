package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door/crawler"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/sale"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/telemetry"
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
	metrics  *metricsServer     // nil: /metrics is on the main address
	pprof    *pprofServer       // nil: profiling is off
	tracing  *telemetry.Tracing // nil: tracing is off
	loops    context.Context    // the background loops' lifetime, ended by Close

	closeOnce sync.Once
	closeErr  error

	// AdminToken is the admin bearer token in force.
	AdminToken string
	// Events, Claims and Snapshots are exposed for commands (demo,
	// reconcile) and tests.
	Events    *event.Store
	Claims    *claim.Store
	Snapshots *sale.Snapshots
	JS        jetstream.JetStream
	// Limiter keeps the rate limits; its Degraded and Stats are for
	// metrics.
	Limiter *limit.Limiter
	// Crawlers verifies search-engine crawlers' addresses (the rules'
	// verified_crawler(), a door.Crawlers); Close stops its lookups.
	Crawlers *crawler.Verifier
	// Lists keeps the door's lists in Redis (the admin API's); ListView
	// is this node's view of them (the door's checks), refreshed every
	// tick.
	Lists    *lists.Store
	ListView *lists.Set
	// SignInLinks makes the console's one-time sign-in links; nil unless
	// Config.DemoSignInLinks (the demo command's).
	SignInLinks *staff.SignInLinks
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

// tracingFlush bounds the export of the spans still queued at Close.
const tracingFlush = 5 * time.Second

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
	n.Crawlers.Close() // every request has ended: none asks it any more
	// Every request and loop has ended: export the spans still queued,
	// for a few seconds at most. A collector that does not take them
	// loses them; the node still shuts down cleanly.
	tctx, tcancel := context.WithTimeout(ctx, tracingFlush)
	if terr := n.tracing.Shutdown(tctx); terr != nil {
		n.cfg.Log.Warn("spans not exported at shutdown", "err", terr)
	}
	tcancel()
	n.back.close()
	if serr := <-n.serveErr; serr != nil && !errors.Is(serr, net.ErrClosed) && err == nil {
		err = serr
	}
	return err
}
