package metrics

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/prometheus/client_golang/prometheus"
)

// Sales is what the collectors read the node's view of every sale from:
// sale.Snapshots. All must be cheap (no Redis) and safe for concurrent
// use.
type Sales interface {
	All() []*admission.Sale
}

func saleDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"event"}, nil)
}

// The node's view of each sale, refreshed every tick (100 ms). Every node
// reports the same figures for the queue (they come from Redis); aggregate
// across nodes with max, not sum.
var (
	joinedDesc    = saleDesc("anteroom_queue_joined_total", "People who joined the sale's queue.")
	admittedDesc  = saleDesc("anteroom_admitted_total", "Queue positions admitted so far: min(frontier, joined). rate() of it is the admission rate.")
	frontierDesc  = saleDesc("anteroom_queue_frontier", "The admission frontier F: positions at or below it are admitted (can run ahead of joined).")
	lengthDesc    = saleDesc("anteroom_queue_length", "People waiting: joined minus admitted.")
	noShowsDesc   = saleDesc("anteroom_noshows_total", "Admitted positions whose holder never fetched an admission token within the grace period.")
	remainingDesc = saleDesc("anteroom_stock_remaining", "Units left for sale, as of the node's last refresh.")
	rateDesc      = saleDesc("anteroom_admission_measured_rate", "Admissions per second the frontier actually advanced at, smoothed.")
	configRate    = saleDesc("anteroom_admission_configured_rate", "Admissions per second the sale is configured for (admit_rate_per_second) in this node's view.")
	pausedDesc    = saleDesc("anteroom_sale_paused", "1 while the sale is paused in this node's view, else 0.")
	closedDesc    = saleDesc("anteroom_sale_closed", "1 while staff have the room closed (joins and claims refused) in this node's view, else 0.")
	failOpenDesc  = saleDesc("anteroom_sale_fail_open", "1 while staff have the sale's gate failing open (fail_open_until ahead: everyone let through, claims excepted) in this node's view, else 0.")
	soldOutDesc   = saleDesc("anteroom_sale_sold_out", "1 once the sale's stock is exhausted, else 0.")
	healthDesc    = saleDesc("anteroom_sale_health_held", "1 while the shop's health check holds admission (apart from a staff pause), else 0.")
	activeDesc    = saleDesc("anteroom_sale_checkout_active", "People in checkout, counted against max_active (0 without it).")
	viewAgeDesc   = saleDesc("anteroom_sale_view_age_seconds", "Age of this node's view of the sale; stays near the refresh tick while Redis answers.")
)

// saleCollector reports the node's view of every sale on each scrape.
type saleCollector struct {
	sales Sales
	now   func() time.Time
}

func newSaleCollector(s Sales) *saleCollector { return &saleCollector{sales: s, now: time.Now} }

// Describe sends the descriptors of every sale metric.
func (c *saleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{joinedDesc, admittedDesc, frontierDesc, lengthDesc, noShowsDesc,
		remainingDesc, rateDesc, configRate, pausedDesc, closedDesc, failOpenDesc, soldOutDesc, healthDesc, activeDesc, viewAgeDesc} {
		ch <- d
	}
}

// Collect reads the current view; no Redis.
func (c *saleCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	for _, s := range live(c.sales, now) {
		ev := s.Config.ID
		admitted := min(int64(s.Frontier), s.Joined)
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, ev)
		}
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, ev)
		}
		counter(joinedDesc, float64(s.Joined))
		counter(admittedDesc, float64(max(admitted, 0)))
		counter(noShowsDesc, float64(s.NoShows))
		gauge(frontierDesc, s.Frontier)
		gauge(lengthDesc, float64(max(s.Joined-admitted, 0)))
		gauge(remainingDesc, float64(max(s.Remaining, 0)))
		gauge(rateDesc, s.Rate)
		gauge(configRate, s.Config.AdmitRatePerSecond)
		gauge(pausedDesc, boolValue(s.Config.Paused))
		gauge(closedDesc, boolValue(s.Config.IsClosed()))
		gauge(failOpenDesc, boolValue(s.Config.FailsOpen(now)))
		gauge(soldOutDesc, boolValue(s.SoldOut))
		gauge(healthDesc, boolValue(s.HealthHeld))
		gauge(activeDesc, float64(s.Active))
		gauge(viewAgeDesc, max(now.Sub(s.Refreshed).Seconds(), 0))
	}
}

// Retired is how long after a sale's end its metrics are still reported:
// long enough for dashboards to show the end, short enough that months of
// sales do not grow every scrape (and its Redis reads) without bound.
const Retired = time.Hour

// live returns the sales that have not ended more than Retired ago.
func live(sales Sales, now time.Time) []*admission.Sale {
	all := sales.All()
	out := all[:0:0]
	for _, s := range all {
		if end := s.Config.EndsAt; end.IsZero() || now.Before(end.Add(Retired)) {
			out = append(out, s)
		}
	}
	return out
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Claims reads an event's claim totals from Redis: claim.Store.
type Claims interface {
	Totals(ctx context.Context, sale claim.Sale) (claim.Totals, error)
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
	for _, s := range live(c.sales, time.Now()) {
		ev := s.Config.ID
		t, err := c.claims.Totals(ctx, claim.SaleOf(s.Config))
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
