// Package metrics defines anteroom's Prometheus metrics and registers them
// on a registry the node creates: no global default registry, no init().
//
// Two kinds of metric live here. What already exists elsewhere — the node's
// view of every sale, the claim totals in Redis — is pulled at scrape time
// by collectors, so nothing on the hot path keeps a second copy. What only
// happens in passing — an HTTP request, an admission token, a JetStream
// publish, a Redis call, a rate-limit decision — is pushed through the
// methods of Metrics, each a few atomic operations.
//
// Figures that other packages already count — the rate limiter's Stats,
// the order worker's lag — are read from them at scrape time once the node
// hands them over (WatchLimiter, WatchOrderLag).
//
// Every name starts with anteroom_, carries its unit (seconds) where it has
// one, and counters end in _total; TestLint holds the set to promlint.
package metrics

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config says where the scrape-time collectors read from. A nil source
// leaves its metrics out.
type Config struct {
	// Sales is the node's view of every sale (sale.Snapshots).
	Sales Sales
	// Claims reads the claim totals of a sale from Redis (claim.Store).
	Claims Claims
	// ScrapeTimeout bounds the Redis reads of one scrape.
	//
	// Default: 500ms
	ScrapeTimeout time.Duration
	// SlowRedis is the duration above which a Redis call (command or
	// pipeline) counts as slow.
	//
	// Default: 50ms
	SlowRedis time.Duration
	// OnError receives errors of scrape-time reads; the scrape goes on
	// without the figures that failed.
	//
	// Default: ignore
	OnError func(error)
}

// Metrics holds the pushed metrics and the registry they live on. Its
// methods are safe for concurrent use; a nil *Metrics records nothing.
type Metrics struct {
	reg  *prometheus.Registry
	slow time.Duration

	httpDuration *prometheus.HistogramVec
	// httpObservers caches httpDuration's series by requestSeries: a
	// request then costs no label hashing, checking or formatting. The
	// keys are few (routes × methods × statuses are fixed sets).
	httpObservers   sync.Map
	tokensIssued    *prometheus.CounterVec
	publishDuration *prometheus.HistogramVec
	redisDuration   *prometheus.HistogramVec
	redisSlow       *prometheus.CounterVec
	watched         *watched
}

// latencyBuckets suit requests answered from memory (status, well under a
// millisecond) as well as claims waiting for a JetStream acknowledgement.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// New creates anteroom's metrics and registers them, the Go runtime and the
// process collectors and the scrape-time collectors of cfg on reg.
func New(reg *prometheus.Registry, cfg Config) (*Metrics, error) {
	if cfg.ScrapeTimeout <= 0 {
		cfg.ScrapeTimeout = 500 * time.Millisecond
	}
	if cfg.SlowRedis <= 0 {
		cfg.SlowRedis = 50 * time.Millisecond
	}
	if cfg.OnError == nil {
		cfg.OnError = func(error) {}
	}
	m := &Metrics{
		reg: reg, slow: cfg.SlowRedis, watched: &watched{timeout: cfg.ScrapeTimeout, onErr: cfg.OnError},
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "anteroom_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route template, method and status code.",
			Buckets: latencyBuckets,
		}, []string{"route", "method", "status"}),
		tokensIssued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anteroom_admission_tokens_issued_total",
			Help: "Admission tokens issued by this node's status answers.",
		}, []string{"event"}),
		publishDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "anteroom_jetstream_publish_duration_seconds",
			Help:    "Time from publishing an order event to JetStream's acknowledgement, by result (ok or error).",
			Buckets: latencyBuckets,
		}, []string{"result"}),
		redisDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "anteroom_redis_call_duration_seconds",
			Help:    "Time of one Redis command or pipeline as the client sees it, by command (pipeline for a pipeline).",
			Buckets: latencyBuckets,
		}, []string{"command"}),
		redisSlow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anteroom_redis_slow_calls_total",
			Help: "Redis commands or pipelines slower than the slow-call threshold, by command.",
		}, []string{"command"}),
	}
	return m, errors.Join(
		reg.Register(collectors.NewGoCollector()),
		reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		reg.Register(m.httpDuration),
		reg.Register(m.tokensIssued),
		reg.Register(m.publishDuration),
		reg.Register(m.redisDuration),
		reg.Register(m.redisSlow),
		reg.Register(m.watched),
		registerIf(reg, cfg.Sales != nil, func() prometheus.Collector { return newSaleCollector(cfg.Sales) }),
		registerIf(reg, cfg.Sales != nil && cfg.Claims != nil, func() prometheus.Collector {
			return newClaimCollector(cfg.Sales, cfg.Claims, cfg.ScrapeTimeout, cfg.OnError)
		}),
	)
}

func registerIf(reg *prometheus.Registry, ok bool, c func() prometheus.Collector) error {
	if !ok {
		return nil
	}
	return reg.Register(c())
}

// Handler serves the registry in the Prometheus exposition formats. A
// collector that fails leaves its metrics out; the rest are still served.
func (m *Metrics) Handler() http.Handler {
	// No Timeout option: it derives a context from the request's, and
	// behind fiber's adaptor that is fasthttp's RequestCtx, whose Done
	// races with server shutdown. The collectors bound their own reads
	// (Config.ScrapeTimeout).
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:            m.reg,
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
	})
}

// ObserveRequest records one HTTP request. route must be the route
// template (/events/:id/status), never the raw path, and method one of a
// fixed set: labels are kept for the life of the process.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	k := requestSeries{route, method, status}
	o, ok := m.httpObservers.Load(k)
	if !ok {
		o, _ = m.httpObservers.LoadOrStore(k, m.httpDuration.WithLabelValues(route, method, strconv.Itoa(status)))
	}
	o.(prometheus.Observer).Observe(d.Seconds())
}

// requestSeries names one series of the request histogram.
type requestSeries struct {
	route, method string
	status        int
}

// TokenIssued counts one admission token issued for event ev.
func (m *Metrics) TokenIssued(ev string) {
	if m == nil {
		return
	}
	m.tokensIssued.WithLabelValues(ev).Inc()
}

// ObservePublish records one JetStream publish that took d and ended with
// err (nil: acknowledged).
func (m *Metrics) ObservePublish(d time.Duration, err error) {
	if m == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.publishDuration.WithLabelValues(result).Observe(d.Seconds())
}
