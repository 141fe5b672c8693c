package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	orderLagDesc = prometheus.NewDesc("anteroom_order_lag_seconds",
		"How far the order worker trails the order stream: age of the oldest order event not yet processed.", nil, nil)
	limiterDegradedDesc = prometheus.NewDesc("anteroom_ratelimit_degraded",
		"1 while the rate limiter runs on node-local buckets because Redis is slow or down, else 0.", nil, nil)
)

// watched reads, at scrape time, figures that other parts of the node
// compute and hand over as functions once they exist. A figure whose
// function is not set is left out of the scrape rather than reported as a
// misleading zero.
type watched struct {
	orderLag atomic.Pointer[func() time.Duration]
	degraded atomic.Pointer[func() bool]
}

// Describe sends nothing: the set of metrics depends on what is watched
// (an unchecked collector).
func (w *watched) Describe(chan<- *prometheus.Desc) {}

// Collect reads the watched functions.
func (w *watched) Collect(ch chan<- prometheus.Metric) {
	if f := w.orderLag.Load(); f != nil {
		ch <- prometheus.MustNewConstMetric(orderLagDesc, prometheus.GaugeValue, (*f)().Seconds())
	}
	if f := w.degraded.Load(); f != nil {
		v := 0.0
		if (*f)() {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(limiterDegradedDesc, prometheus.GaugeValue, v)
	}
}

// WatchOrderLag reports anteroom_order_lag_seconds from lag, called on
// every scrape; lag must be cheap and safe for concurrent use. Until it is
// called the metric is absent.
func (m *Metrics) WatchOrderLag(lag func() time.Duration) {
	if m != nil && lag != nil {
		m.watched.orderLag.Store(&lag)
	}
}

// WatchLimiter reports anteroom_ratelimit_degraded from degraded (the rate
// limiter's Degraded method), called on every scrape. Until it is called
// the metric is absent.
func (m *Metrics) WatchLimiter(degraded func() bool) {
	if m != nil && degraded != nil {
		m.watched.degraded.Store(&degraded)
	}
}
