package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/limit"
	"github.com/prometheus/client_golang/prometheus"
)

// Limiter is what the metrics read from the rate limiter: limit.Limiter.
type Limiter interface {
	Stats() limit.Stats
}

// OrderLag reads the order worker's consumer: claim.OrderLag bound to the
// node's JetStream. A nil *claim.Lag means no worker has run yet.
type OrderLag func(ctx context.Context) (*claim.Lag, error)

func plainDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// The order worker's position on the stream: global figures, the same on
// every node.
var (
	orderLagDesc     = plainDesc("anteroom_order_lag_seconds", "Age of the oldest order event the order worker has not acknowledged.")
	orderPendingDesc = plainDesc("anteroom_order_events_pending", "Order events on the stream not yet delivered to the order worker.")
	orderAckingDesc  = plainDesc("anteroom_order_events_ack_pending", "Order events delivered to the order worker and not yet acknowledged.")
)

// The rate limiter of this node.
var (
	limitDecisionsDesc = plainDesc("anteroom_ratelimit_decisions_total", "Rate-limit decisions of join and claim, by result (pass or reject).", "result")
	limitBackendDesc   = plainDesc("anteroom_ratelimit_backend_decisions_total", "Rate-limit decisions by where they were made: redis (shared buckets) or local (degraded, node-local buckets).", "backend")
	limitDegradedDesc  = plainDesc("anteroom_ratelimit_degraded", "1 while the rate limiter decides on node-local buckets because Redis is slow or down, else 0.")
	limitSwitchesDesc  = plainDesc("anteroom_ratelimit_degradations_total", "Times the rate limiter fell back to node-local buckets.")
	limitErrorsDesc    = plainDesc("anteroom_ratelimit_redis_errors_total", "Rate-limiter Redis calls that failed or timed out.")
	limitSlowDesc      = plainDesc("anteroom_ratelimit_redis_slow_calls_total", "Rate-limiter Redis calls slower than its slow threshold.")
	limitNodesDesc     = plainDesc("anteroom_ratelimit_healthy_nodes", "Nodes in the rate limiter's heartbeat set; shared budgets are split by it when degraded.")
)

// watched reads, at scrape time, figures other parts of the node already
// keep, handed over once they exist. A figure with no source is left out
// of the scrape rather than reported as a misleading zero.
type watched struct {
	timeout  time.Duration
	onErr    func(error)
	limiter  atomic.Pointer[Limiter]
	orderLag atomic.Pointer[OrderLag]
}

// Describe sends nothing: the set of metrics depends on what is watched
// (an unchecked collector).
func (w *watched) Describe(chan<- *prometheus.Desc) {}

// Collect reads the watched sources.
func (w *watched) Collect(ch chan<- prometheus.Metric) {
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	if l := w.limiter.Load(); l != nil {
		s := (*l).Stats()
		metric(limitDecisionsDesc, prometheus.CounterValue, float64(s.Allowed), "pass")
		metric(limitDecisionsDesc, prometheus.CounterValue, float64(s.Denied), "reject")
		metric(limitBackendDesc, prometheus.CounterValue, float64(s.RedisDecisions), "redis")
		metric(limitBackendDesc, prometheus.CounterValue, float64(s.LocalDecisions), "local")
		metric(limitDegradedDesc, prometheus.GaugeValue, boolValue(s.Degraded))
		metric(limitSwitchesDesc, prometheus.CounterValue, float64(s.Degradations))
		metric(limitErrorsDesc, prometheus.CounterValue, float64(s.RedisErrors))
		metric(limitSlowDesc, prometheus.CounterValue, float64(s.SlowCalls))
		metric(limitNodesDesc, prometheus.GaugeValue, float64(s.HealthyNodes))
	}
	if f := w.orderLag.Load(); f != nil {
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		lag, err := (*f)(ctx)
		cancel()
		switch {
		case err != nil:
			w.onErr(err)
		case lag != nil:
			metric(orderLagDesc, prometheus.GaugeValue, lag.OldestSeconds)
			metric(orderPendingDesc, prometheus.GaugeValue, float64(lag.Pending))
			metric(orderAckingDesc, prometheus.GaugeValue, float64(lag.AckPending))
		}
	}
}

// WatchLimiter reports the rate limiter's Stats on every scrape. Until it
// is called the rate-limit metrics are absent.
func (m *Metrics) WatchLimiter(l Limiter) {
	if m != nil && l != nil {
		m.watched.limiter.Store(&l)
	}
}

// WatchOrderLag reports the order worker's lag on every scrape, read
// within the scrape timeout. Until it is called, and while no worker has
// run, the order-lag metrics are absent.
func (m *Metrics) WatchOrderLag(lag OrderLag) {
	if m != nil && lag != nil {
		m.watched.orderLag.Store(&lag)
	}
}
