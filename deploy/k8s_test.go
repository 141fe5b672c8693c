package deploy_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// manifests returns every Kubernetes object under k8s/ by kind/name.
func manifests(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		for _, d := range load(t, f) {
			out[getString(d, "kind")+"/"+getString(d, "metadata", "name")] = d
		}
	}
	return out
}

// container returns the first container of a Deployment and its env.
func container(t *testing.T, dep map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	c, ok := get(dep, "spec", "template", "spec", "containers", "0").(map[string]any)
	if !ok {
		t.Fatalf("%s: no container", getString(dep, "metadata", "name"))
	}
	env := map[string]any{}
	list, _ := c["env"].([]any)
	for _, e := range list {
		if v, ok := get(e, "value").(string); ok {
			env[getString(e, "name")] = v
		} else {
			env[getString(e, "name")] = get(e, "valueFrom")
		}
	}
	return c, env
}

func seconds(t *testing.T, what, s string) int {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s %q: %v", what, s, err)
	}
	return int(d / time.Second)
}

// TestServeDeployment checks the node's Deployment against how a node
// starts, is probed and drains.
func TestServeDeployment(t *testing.T) {
	m := manifests(t)
	dep, ok := m["Deployment/anteroom"]
	if !ok {
		t.Fatalf("no Deployment/anteroom among %v", reflect.ValueOf(m).MapKeys())
	}
	c, env := container(t, dep)
	if got := get(c, "args"); !reflect.DeepEqual(got, []any{"serve"}) {
		t.Errorf("args %v, want [serve]", got)
	}
	if p := getString(c, "readinessProbe", "httpGet", "path"); p != "/readyz" {
		t.Errorf("readiness probe %q, want /readyz", p)
	}
	if p := getString(c, "livenessProbe", "httpGet", "path"); p != "/healthz" {
		t.Errorf("liveness probe %q, want /healthz", p)
	}
	preStop := seconds(t, "preStop", getString(c, "lifecycle", "preStop", "sleep", "seconds")+"s")
	delay := seconds(t, "ANTEROOM_DRAIN_DELAY", env["ANTEROOM_DRAIN_DELAY"].(string))
	timeout := seconds(t, "ANTEROOM_DRAIN_TIMEOUT", env["ANTEROOM_DRAIN_TIMEOUT"].(string))
	if preStop != delay {
		t.Errorf("preStop sleeps %ds, ANTEROOM_DRAIN_DELAY is %ds: want them equal", preStop, delay)
	}
	grace := seconds(t, "grace", getString(dep, "spec", "template", "spec", "terminationGracePeriodSeconds")+"s")
	if grace <= preStop+delay+timeout {
		t.Errorf("terminationGracePeriodSeconds %d, want above preStop %d + drain delay %d + drain timeout %d", grace, preStop, delay, timeout)
	}
	if getString(dep, "spec", "template", "spec", "securityContext", "runAsNonRoot") != "true" ||
		getString(c, "securityContext", "readOnlyRootFilesystem") != "true" {
		t.Error("the node must run as non-root on a read-only root filesystem")
	}
	for _, v := range []string{"ANTEROOM_ADMIN_TOKEN", "ANTEROOM_TICKET_SECRET"} {
		ref := getString(env[v], "secretKeyRef", "key")
		if ref == "" || get(m["Secret/anteroom"], "stringData", ref) == nil {
			t.Errorf("%s comes from secret key %q, which Secret/anteroom lacks", v, ref)
		}
	}
	if env["ANTEROOM_STREAM_REPLICAS"] != "3" {
		t.Errorf("stream replicas %v, want 3 on a NATS cluster", env["ANTEROOM_STREAM_REPLICAS"])
	}
	labels := get(dep, "spec", "template", "metadata", "labels")
	for _, sel := range []string{"Service/anteroom", "PodDisruptionBudget/anteroom"} {
		s := get(m[sel], "spec", "selector")
		if ml := get(s, "matchLabels"); ml != nil {
			s = ml
		}
		if !reflect.DeepEqual(s, labels) {
			t.Errorf("%s selects %v, pods carry %v", sel, s, labels)
		}
	}
	w, wenv := container(t, m["Deployment/anteroom-worker"])
	if !reflect.DeepEqual(get(w, "args"), []any{"worker"}) || wenv["ANTEROOM_NATS_URL"] != env["ANTEROOM_NATS_URL"] {
		t.Errorf("worker: args %v, NATS %v (nodes: %v)", get(w, "args"), wenv["ANTEROOM_NATS_URL"], env["ANTEROOM_NATS_URL"])
	}
}

// TestAutoscaler checks the HPA scales the node Deployment on CPU,
// request latency (a Pods metric) and outbox depth (an External metric),
// each served by a rule of the Prometheus adapter's configuration.
func TestAutoscaler(t *testing.T) {
	m := manifests(t)
	hpa := m["HorizontalPodAutoscaler/anteroom"]
	if getString(hpa, "apiVersion") != "autoscaling/v2" || getString(hpa, "spec", "scaleTargetRef", "name") != "anteroom" {
		t.Fatalf("HPA %v", hpa)
	}
	adapter, err := parseYAML(getString(m["ConfigMap/prometheus-adapter"], "data", "config.yaml"))
	if err != nil {
		t.Fatalf("adapter config: %v", err)
	}
	served := map[string]bool{}
	for _, list := range []string{"rules", "externalRules"} {
		rules, _ := get(adapter[0], list).([]any)
		for _, r := range rules {
			served[getString(r, "name", "as")] = true
		}
	}
	kinds := map[string]bool{}
	metrics, _ := get(hpa, "spec", "metrics").([]any)
	for _, mt := range metrics {
		kind := getString(mt, "type")
		kinds[kind] = true
		switch kind {
		case "Resource":
			if getString(mt, "resource", "name") != "cpu" {
				t.Errorf("resource metric %v", mt)
			}
		case "Pods", "External":
			name := getString(mt, strings.ToLower(kind), "metric", "name")
			if !served[name] {
				t.Errorf("%s metric %q: no adapter rule serves it (rules: %v)", kind, name, served)
			}
		}
	}
	if !kinds["Resource"] || !kinds["Pods"] || !kinds["External"] {
		t.Errorf("HPA metric kinds %v, want Resource (cpu), Pods (latency) and External (outbox)", kinds)
	}
}

func TestKustomizationResourcesExist(t *testing.T) {
	k := load(t, filepath.Join("k8s", "kustomization.yaml"))[0]
	list, _ := k["resources"].([]any)
	if len(list) == 0 {
		t.Fatal("no resources")
	}
	for _, r := range list {
		if _, err := os.Stat(filepath.Join("k8s", r.(string))); err != nil {
			t.Errorf("resource %v: %v", r, err)
		}
	}
}
