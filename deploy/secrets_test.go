package deploy_test

import (
	"encoding/hex"
	"regexp"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/tokens"
)

// requiredVar is compose's "${VAR:?message}": the stack does not start
// until the variable is set.
var requiredVar = regexp.MustCompile(`^\$\{(ANTEROOM_[A-Z_]+):\?[^}]+\}$`)

// TestNoUsableDefaultSecrets: the compose file makes the operator set the
// admin token and the ticket secret (no fallback value), and the
// placeholders in the Kubernetes Secret are refused by a node.
func TestNoUsableDefaultSecrets(t *testing.T) {
	services, _ := load(t, "compose.yaml")[0]["services"].(map[string]any)
	for _, svc := range []string{"anteroom-1", "anteroom-2", "worker"} {
		for _, v := range []string{"ANTEROOM_ADMIN_TOKEN", "ANTEROOM_TICKET_SECRET"} {
			got := getString(services, svc, "environment", v)
			if m := requiredVar.FindStringSubmatch(got); m == nil || m[1] != v {
				t.Errorf("compose %s %s = %q: want ${%s:?message}, no default", svc, v, got, v)
			}
		}
	}
	secret := load(t, "k8s/secret.yaml")[0]
	if err := tokens.CheckAdminToken(getString(secret, "stringData", "admin-token")); err == nil {
		t.Error("a node accepts the Kubernetes Secret's admin-token placeholder")
	}
	if b, err := hex.DecodeString(getString(secret, "stringData", "ticket-secret")); err == nil && tokens.CheckSecret(b) == nil {
		t.Error("a node accepts the Kubernetes Secret's ticket-secret placeholder")
	}
}

// TestMetricsOffThePublicPort: the deployments serve /metrics on
// ANTEROOM_METRICS_ADDR, and Prometheus scrapes that port.
func TestMetricsOffThePublicPort(t *testing.T) {
	services, _ := load(t, "compose.yaml")[0]["services"].(map[string]any)
	if got := getString(services, "anteroom-1", "environment", "ANTEROOM_METRICS_ADDR"); got != ":9100" {
		t.Errorf("compose ANTEROOM_METRICS_ADDR %q, want :9100", got)
	}
	prom := load(t, "prometheus/prometheus.yml")[0]
	jobs, _ := get(prom, "scrape_configs").([]any)
	for _, j := range jobs {
		if getString(j, "job_name") != "anteroom" {
			continue
		}
		sc, _ := get(j, "static_configs").([]any)
		for _, s := range sc {
			targets, _ := get(s, "targets").([]any)
			for _, tg := range targets {
				if !strings.HasSuffix(tg.(string), ":9100") {
					t.Errorf("prometheus scrapes %v, want the metrics port 9100", tg)
				}
			}
		}
	}
	m := manifests(t)
	dep := m["Deployment/anteroom"]
	_, env := container(t, dep)
	if env["ANTEROOM_METRICS_ADDR"] != ":9100" {
		t.Errorf("k8s ANTEROOM_METRICS_ADDR %v, want :9100", env["ANTEROOM_METRICS_ADDR"])
	}
	if p := getString(dep, "spec", "template", "metadata", "annotations", "prometheus.io/port"); p != "9100" {
		t.Errorf("k8s scrape port annotation %q, want 9100", p)
	}
}
