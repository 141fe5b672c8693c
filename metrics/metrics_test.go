package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
)

// fakeSales is a hand-written fake of the node's view.
type fakeSales struct{ all func() []*admission.Sale }

func (f fakeSales) All() []*admission.Sale { return f.all() }

// fakeLimiter is a hand-written fake of the rate limiter.
type fakeLimiter struct{ s limit.Stats }

func (f fakeLimiter) Stats() limit.Stats { return f.s }

// fakeClaims is a hand-written fake of the claim store.
type fakeClaims struct {
	totals func(ctx context.Context, sale claim.Sale) (claim.Totals, error)
}

func (f fakeClaims) Totals(ctx context.Context, sale claim.Sale) (claim.Totals, error) {
	return f.totals(ctx, sale)
}

func sale(id string, joined int64, frontier float64) *admission.Sale {
	s := &admission.Sale{Config: event.Config{ID: id, Buckets: 2, AdmitRatePerSecond: 250, Paused: true}, Remaining: 40, Rate: 180, Refreshed: time.Now()}
	s.Joined, s.Frontier, s.NoShows = joined, frontier, 3
	return s
}

// newMetrics returns metrics on a fresh registry reading two sales, with
// every pushed metric observed once.
func newMetrics(t *testing.T, claims metrics.Claims) (*metrics.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	old := sale("winter", 5, 5)
	old.Config.EndsAt = time.Now().Add(-metrics.Retired - time.Minute) // long over: not reported
	sales := fakeSales{all: func() []*admission.Sale {
		return []*admission.Sale{sale("spring", 100, 60.5), sale("autumn", 10, 25), old}
	}}
	m, err := metrics.New(reg, metrics.Config{Sales: sales, Claims: claims, SlowRedis: time.Nanosecond})
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	m.ObserveRequest("/events/:id/status", "GET", 200, 300*time.Microsecond)
	m.TokenIssued("spring")
	m.ObservePublish(2*time.Millisecond, nil)
	m.ObservePublish(time.Second, errors.New("no responders"))
	m.WatchOrderLag(func(context.Context) (*claim.Lag, error) {
		return &claim.Lag{Pending: 4, AckPending: 2, OldestSeconds: 1.5}, nil
	})
	m.WatchLimiter(fakeLimiter{limit.Stats{Degraded: true, HealthyNodes: 3, Allowed: 90, Denied: 10, RedisDecisions: 60, LocalDecisions: 40, Degradations: 1}})
	return m, reg
}

func okClaims() fakeClaims {
	return fakeClaims{totals: func(_ context.Context, sale claim.Sale) (claim.Totals, error) {
		if sale.Buckets != 2 {
			return claim.Totals{}, errors.New("wrong bucket count")
		}
		return claim.Totals{Granted: 7, Released: 2, Outbox: 1, Remaining: 40}, nil
	}}
}

// gather scrapes reg into name → family.
func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value returns the value of the series of family name whose labels are
// the name=value pairs given, and whether it exists.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if got[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestLint holds every metric anteroom exposes to the Prometheus naming
// conventions.
func TestLint(t *testing.T) {
	_, reg := newMetrics(t, okClaims())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	for _, mf := range mfs {
		if n := mf.GetName(); !strings.HasPrefix(n, "anteroom_") && !strings.HasPrefix(n, "go_") && !strings.HasPrefix(n, "process_") {
			t.Errorf("metric %s: want the anteroom_ prefix", n)
		}
	}
}

func TestScrapeValues(t *testing.T) {
	_, reg := newMetrics(t, okClaims())
	fams := gather(t, reg)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"anteroom_queue_length", []string{"event", "spring"}, 40},
		{"anteroom_queue_length", []string{"event", "autumn"}, 0}, // frontier ran ahead of joined
		{"anteroom_admitted_total", []string{"event", "spring"}, 60},
		{"anteroom_admitted_total", []string{"event", "autumn"}, 10},
		{"anteroom_queue_frontier", []string{"event", "spring"}, 60.5},
		{"anteroom_queue_joined_total", []string{"event", "spring"}, 100},
		{"anteroom_noshows_total", []string{"event", "spring"}, 3},
		{"anteroom_stock_remaining", []string{"event", "spring"}, 40},
		{"anteroom_admission_measured_rate", []string{"event", "spring"}, 180},
		{"anteroom_admission_configured_rate", []string{"event", "spring"}, 250},
		{"anteroom_sale_paused", []string{"event", "spring"}, 1},
		{"anteroom_sale_sold_out", []string{"event", "spring"}, 0},
		{"anteroom_claims_granted_total", []string{"event", "autumn"}, 7},
		{"anteroom_claims_released_total", []string{"event", "autumn"}, 2},
		{"anteroom_outbox_depth", []string{"event", "spring"}, 1},
		{"anteroom_claim_totals_errors_total", nil, 0},
		{"anteroom_order_lag_seconds", nil, 1.5},
		{"anteroom_order_events_pending", nil, 4},
		{"anteroom_order_events_ack_pending", nil, 2},
		{"anteroom_ratelimit_degraded", nil, 1},
		{"anteroom_ratelimit_healthy_nodes", nil, 3},
		{"anteroom_ratelimit_degradations_total", nil, 1},
		{"anteroom_ratelimit_decisions_total", []string{"result", "pass"}, 90},
		{"anteroom_ratelimit_decisions_total", []string{"result", "reject"}, 10},
		{"anteroom_ratelimit_backend_decisions_total", []string{"backend", "local"}, 40},
		{"anteroom_admission_tokens_issued_total", []string{"event", "spring"}, 1},
		{"anteroom_jetstream_publish_duration_seconds", []string{"result", "ok"}, 1},
		{"anteroom_jetstream_publish_duration_seconds", []string{"result", "error"}, 1},
		{"anteroom_http_request_duration_seconds", []string{"route", "/events/:id/status", "method", "GET", "status", "200"}, 1},
	} {
		got, ok := value(fams, c.name, c.labels...)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	for _, name := range []string{"anteroom_queue_joined_total", "anteroom_claims_granted_total"} {
		if _, ok := value(fams, name, "event", "winter"); ok {
			t.Errorf("%s reported for a sale that ended long ago", name)
		}
	}
	if age, ok := value(fams, "anteroom_sale_view_age_seconds", "event", "spring"); !ok || age < 0 {
		t.Errorf("view age %v (present %v), want ≥ 0", age, ok)
	}
}

// TestClaimTotalsTimeout shows that a Redis that does not answer costs a
// scrape the claim figures, not the scrape itself.
func TestClaimTotalsTimeout(t *testing.T) {
	stuck := fakeClaims{totals: func(ctx context.Context, _ claim.Sale) (claim.Totals, error) {
		<-ctx.Done()
		return claim.Totals{}, ctx.Err()
	}}
	reg := prometheus.NewRegistry()
	sales := fakeSales{all: func() []*admission.Sale { return []*admission.Sale{sale("spring", 1, 1)} }}
	var seen []error
	_, err := metrics.New(reg, metrics.Config{Sales: sales, Claims: stuck, ScrapeTimeout: 10 * time.Millisecond,
		OnError: func(err error) { seen = append(seen, err) }})
	if err != nil {
		t.Fatal(err)
	}
	fams := gather(t, reg)
	if _, ok := fams["anteroom_claims_granted_total"]; ok {
		t.Error("granted reported although Redis did not answer")
	}
	if _, ok := value(fams, "anteroom_queue_joined_total", "event", "spring"); !ok {
		t.Error("the node's view is missing from the scrape")
	}
	if n, _ := value(fams, "anteroom_claim_totals_errors_total"); n != 1 {
		t.Errorf("totals errors %v, want 1", n)
	}
	if len(seen) != 1 || !errors.Is(seen[0], context.DeadlineExceeded) {
		t.Errorf("errors reported %v, want one deadline", seen)
	}
}

func TestRedisHook(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	m, reg := newMetrics(t, okClaims()) // every call is slow: threshold 1ns
	rdb.AddHook(m.RedisHook())
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "k")
		p.Get(ctx, "missing")
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	fams := gather(t, reg)
	// go-redis also sends a pipeline (HELLO, CLIENT SETINFO) on each new
	// connection: at least our one pipeline.
	for cmd, least := range map[string]float64{"set": 1, "pipeline": 1} {
		if n, _ := value(fams, "anteroom_redis_slow_calls_total", "command", cmd); n < least {
			t.Errorf("slow %s calls %v, want at least %v", cmd, n, least)
		}
		if n, _ := value(fams, "anteroom_redis_call_duration_seconds", "command", cmd); n < least {
			t.Errorf("timed %s calls %v, want at least %v", cmd, n, least)
		}
	}
	if _, ok := value(fams, "anteroom_redis_call_duration_seconds", "command", "get"); ok {
		t.Error("commands inside a pipeline timed one by one, want the pipeline as a whole")
	}
}

// TestOrderLagWithoutWorker leaves the order-lag figures out until a
// worker has run, rather than reporting a zero lag.
func TestOrderLagWithoutWorker(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.WatchOrderLag(func(context.Context) (*claim.Lag, error) { return nil, nil })
	if _, ok := gather(t, reg)["anteroom_order_lag_seconds"]; ok {
		t.Error("order lag reported without a worker")
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *metrics.Metrics
	m.ObserveRequest("/", "GET", 200, time.Millisecond)
	m.TokenIssued("x")
	m.ObservePublish(time.Millisecond, nil)
	m.WatchOrderLag(func(context.Context) (*claim.Lag, error) { return nil, nil })
	m.WatchLimiter(fakeLimiter{})
}
