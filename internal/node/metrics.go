package node

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/metrics"
	"github.com/anteroom/anteroom/sale"
	"github.com/anteroom/anteroom/web"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// ErrDraining is what /readyz reports once the node is draining: load
// balancers take it out of rotation while it finishes what it has.
var ErrDraining = errors.New("node: draining")

// errListsLoading is what /readyz reports until the node's first read of
// every door list succeeds: before, its door refuses every caller of a
// sale with a block list at every step (package door).
var errListsLoading = errors.New("node: the door's lists are not loaded yet")

// ops is the node's operational side: its metrics (on a registry of its
// own, so several nodes in one test process do not collide) and its
// draining flag.
type ops struct {
	metrics  *metrics.Metrics
	backend  func(ctx context.Context) error
	draining atomic.Bool
	// lists is the node's view of the door's lists (lists.Set), set
	// before the node serves: not ready until its first full load.
	lists interface{ Ready() bool }
}

// newOps creates the node's registry and metrics, reading the node's view
// of every sale and the claim totals at scrape time, and times every Redis
// call of back's client.
func newOps(cfg *Config, back *backends, snaps *sale.Snapshots, claims *claim.Store) (*ops, error) {
	m, err := metrics.New(prometheus.NewRegistry(), metrics.Config{
		Sales: snaps, Claims: claims, SlowRedis: cfg.SlowRedis,
		OnError: func(err error) { cfg.Log.Debug("metrics scrape", "err", err) },
	})
	if err != nil {
		return nil, err
	}
	back.rdb.AddHook(m.RedisHook())
	return &ops{metrics: m, backend: back.ready}, nil
}

// watch hands the rate limiter and the order worker's lag to the metrics,
// read at scrape time.
func (o *ops) watch(l *limit.Limiter, js jetstream.JetStream) {
	o.metrics.WatchLimiter(l)
	o.metrics.WatchOrderLag(func(ctx context.Context) (*claim.Lag, error) { return claim.OrderLag(ctx, js) })
}

// ready fails while the node is draining, while its view of the door's
// lists has not loaded every list once, or while a backend does not
// answer.
func (o *ops) ready(ctx context.Context) error {
	if o.draining.Load() {
		return ErrDraining
	}
	if o.lists != nil && !o.lists.Ready() {
		return errListsLoading
	}
	return o.backend(ctx)
}

// observe is what the edge reports to the metrics.
func (o *ops) observe() web.Observe {
	return web.Observe{Request: o.metrics.ObserveRequest, TokenIssued: o.metrics.TokenIssued}
}

// publisher is the order-event publisher the claim service uses.
type publisher interface {
	Publish(ctx context.Context, subject, id string, payload []byte) error
	PublishGrant(ctx context.Context, ev, id string, payload []byte) error
}

// timedPublisher times every JetStream publish, from the call to the
// acknowledgement, into the publish-latency histogram.
type timedPublisher struct {
	pub     publisher
	observe func(d time.Duration, err error)
}

// Publish publishes through the wrapped publisher and records the time
// taken and whether it was acknowledged.
func (p timedPublisher) Publish(ctx context.Context, subject, id string, payload []byte) error {
	start := time.Now()
	err := p.pub.Publish(ctx, subject, id, payload)
	p.observe(time.Since(start), err)
	return err
}

// PublishGrant publishes a granted event through the wrapped publisher's
// failover fence, timed like Publish.
func (p timedPublisher) PublishGrant(ctx context.Context, ev, id string, payload []byte) error {
	start := time.Now()
	err := p.pub.PublishGrant(ctx, ev, id, payload)
	p.observe(time.Since(start), err)
	return err
}

// Drain marks the node as draining: /readyz answers 503 from now on, so a
// load balancer stops sending new traffic, while the node keeps serving
// what still arrives. Close then stops it. Safe to call more than once.
func (n *Node) Drain() {
	if !n.ops.draining.Swap(true) {
		n.cfg.Log.Info("draining: /readyz answers 503; still serving")
	}
}

// Metrics returns the node's metrics, for wiring further sources (the rate
// limiter, the order worker's lag).
func (n *Node) Metrics() *metrics.Metrics { return n.ops.metrics }
