package metrics

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/prometheus/client_golang/prometheus"
)

// Claims reads an event's claim totals from Redis: claim.Store.
type Claims interface {
	Totals(ctx context.Context, ev string, buckets int) (claim.Totals, error)
}

// Claim totals, read from Redis on every scrape. They are global figures:
// every node reports the same values, so aggregate with max, not sum.
var (
	grantedDesc  = saleDesc("anteroom_claims_granted_total", "Units granted by the claim script (Redis), including those later released.")
	releasedDesc = saleDesc("anteroom_claims_released_total", "Granted units returned to stock (expired or cancelled claims).")
	outboxDesc   = saleDesc("anteroom_outbox_depth", "Order events in the Redis outbox not yet acknowledged by JetStream and removed.")
	totalsErrors = prometheus.NewDesc("anteroom_claim_totals_errors_total",
		"Scrapes that could not read an event's claim totals from Redis in time.", nil, nil)
)

// claimCollector reads the claim totals of every sale in the node's view,
// bounded by a short timeout so a slow Redis cannot hang the scrape.
type claimCollector struct {
	sales   Sales
	claims  Claims
	timeout time.Duration
	onErr   func(error)
	errors  atomic.Uint64
}

func newClaimCollector(s Sales, c Claims, timeout time.Duration, onErr func(error)) *claimCollector {
	return &claimCollector{sales: s, claims: c, timeout: timeout, onErr: onErr}
}

// Describe sends the descriptors of the claim metrics.
func (c *claimCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- grantedDesc
	ch <- releasedDesc
	ch <- outboxDesc
	ch <- totalsErrors
}

// Collect reads the totals of every sale; an event whose read fails (or
// runs out of time) is left out of this scrape and counted.
func (c *claimCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	for _, s := range c.sales.All() {
		ev := s.Config.ID
		t, err := c.claims.Totals(ctx, ev, s.Config.Buckets)
		if err != nil {
			c.errors.Add(1)
			c.onErr(fmt.Errorf("metrics: claim totals of %s: %w", ev, err))
			continue
		}
		ch <- prometheus.MustNewConstMetric(grantedDesc, prometheus.CounterValue, float64(t.Granted), ev)
		ch <- prometheus.MustNewConstMetric(releasedDesc, prometheus.CounterValue, float64(t.Released), ev)
		ch <- prometheus.MustNewConstMetric(outboxDesc, prometheus.GaugeValue, float64(t.Outbox), ev)
	}
	ch <- prometheus.MustNewConstMetric(totalsErrors, prometheus.CounterValue, float64(c.errors.Load()))
}
