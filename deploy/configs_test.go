package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/metrics"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"
)

type oneSale struct{}

func (oneSale) All() []*admission.Sale {
	return []*admission.Sale{{Config: event.Config{ID: "e", Buckets: 1}, Refreshed: time.Now()}}
}

type noClaims struct{}

func (noClaims) Totals(context.Context, claim.Sale) (claim.Totals, error) {
	return claim.Totals{}, nil
}

type noLimits struct{}

func (noLimits) Stats() limit.Stats { return limit.Stats{} }

// exposed returns every metric name a node exposes, histogram series
// included, with every source wired and every pushed metric observed.
func exposed(t *testing.T) map[string]bool {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{Sales: oneSale{}, Claims: noClaims{}})
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveRequest("/healthz", "GET", 200, time.Millisecond)
	m.TokenIssued("e")
	m.ObservePublish(time.Millisecond, nil)
	m.WatchLimiter(noLimits{})
	m.WatchOrderLag(func(context.Context) (*claim.Lag, error) { return &claim.Lag{}, nil })
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			names[mf.GetName()+suffix] = true
		}
	}
	// Pushed only on Redis calls, which this test does not make.
	for _, n := range []string{"anteroom_redis_call_duration_seconds", "anteroom_redis_slow_calls_total"} {
		names[n], names[n+"_bucket"], names[n+"_count"] = true, true, true
	}
	return names
}

var metricName = regexp.MustCompile(`\b(anteroom|go|process)_[a-z0-9_]+`)

// TestDashboardAndAutoscalerUseRealMetrics checks every metric name in the
// Grafana dashboard, the HPA and the Prometheus adapter's rules against
// what a node exposes, so a renamed metric cannot leave a blank panel.
func TestDashboardAndAutoscalerUseRealMetrics(t *testing.T) {
	names := exposed(t)
	derived := map[string]bool{"anteroom_http_request_duration_seconds_p99": true} // named by the adapter
	for _, f := range []string{filepath.Join("grafana", "anteroom.json"), filepath.Join("k8s", "hpa.yaml"), filepath.Join("k8s", "prometheus-adapter.yaml")} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := metricName.FindAllString(string(raw), -1)
		if len(found) == 0 {
			t.Errorf("%s names no metric", f)
		}
		for _, n := range found {
			if !names[n] && !derived[n] {
				t.Errorf("%s uses %s, which anteroom does not expose", f, n)
			}
		}
	}
}

func TestNATSConfig(t *testing.T) {
	t.Setenv("NATS_SERVER_NAME", "nats-2")
	opts, err := server.ProcessConfigFile(filepath.Join("nats", "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !opts.JetStream || opts.StoreDir == "" || opts.ServerName != "nats-2" {
		t.Errorf("jetstream %v store %q name %q", opts.JetStream, opts.StoreDir, opts.ServerName)
	}
	if opts.Cluster.Name == "" || opts.Cluster.Port == 0 || len(opts.Routes) != 3 {
		t.Errorf("cluster %q port %d routes %v: want a named cluster of three", opts.Cluster.Name, opts.Cluster.Port, opts.Routes)
	}
	if opts.LameDuckDuration <= 0 || opts.HTTPPort == 0 {
		t.Errorf("lame duck %v, monitoring port %d", opts.LameDuckDuration, opts.HTTPPort)
	}
}

// TestRedisConfig reads deploy/redis/redis.conf, which deploy/local/run.sh
// also starts every node of its cluster with.
func TestRedisConfig(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("redis", "redis.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, " ")
		conf[k] = strings.TrimSpace(v)
	}
	for k, want := range map[string]string{"cluster-enabled": "yes", "appendonly": "yes", "maxmemory-policy": "noeviction", "cluster-require-full-coverage": "yes",
		"min-replicas-to-write": "1"} {
		if conf[k] != want {
			t.Errorf("%s %q, want %q", k, conf[k], want)
		}
	}
	if _, ok := conf["dir"]; ok {
		t.Error("dir is set: it would break `redis-server redis.conf --dir ...` where the directory is missing")
	}
}

func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var froms []string
	user := ""
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "FROM" {
			froms = append(froms, f[1])
		}
		if len(f) >= 2 && f[0] == "USER" {
			user = f[1]
		}
	}
	final := froms[len(froms)-1]
	if len(froms) < 2 || !(strings.Contains(final, "distroless/static") || final == "scratch") {
		t.Errorf("stages %v: want a build stage and a distroless/static or scratch final stage", froms)
	}
	if !strings.Contains(string(raw), "CGO_ENABLED=0") {
		t.Error("the binary must be built with CGO_ENABLED=0 (static)")
	}
	if user == "" || user == "root" || strings.HasPrefix(user, "0") {
		t.Errorf("USER %q: want a non-root user", user)
	}
}

// TestComposeStack checks the compose file runs the whole stack and that
// every file it mounts exists.
func TestComposeStack(t *testing.T) {
	c := load(t, "compose.yaml")[0]
	services, _ := c["services"].(map[string]any)
	for _, s := range []string{"redis-1", "redis-2", "redis-3", "redis-init", "nats-1", "nats-2", "nats-3", "anteroom-1", "anteroom-2", "worker", "prometheus", "grafana"} {
		if services[s] == nil {
			t.Errorf("no service %s", s)
		}
	}
	if got := getString(services, "anteroom-2", "environment", "ANTEROOM_STREAM_REPLICAS"); got != "3" {
		t.Errorf("anteroom-2 stream replicas %q, want 3 (merged from the anchor)", got)
	}
	for name, s := range services {
		vols, _ := get(s, "volumes").([]any)
		for _, v := range vols {
			src, _, _ := strings.Cut(v.(string), ":")
			if strings.HasPrefix(src, "./") {
				if _, err := os.Stat(src); err != nil {
					t.Errorf("%s mounts %s: %v", name, src, err)
				}
			}
		}
	}
}
