// Package deploy_test checks the deployment files: every YAML and JSON
// file parses, the Kubernetes manifests agree with how a node starts,
// drains and is probed, and every metric the dashboard and the autoscaler
// use is one anteroom exposes.
package deploy_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// yamlFiles returns the YAML files under deploy/ that this package owns
// (deploy/gateway/'s Envoy, ingress-nginx and Traefik examples have their
// shape tests; internal/node runs the nginx, Caddy and HAProxy files in
// those servers).
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == "gateway" {
			return filepath.SkipDir
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// load parses one YAML file into its documents.
func load(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := parseYAML(string(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := make([]map[string]any, 0, len(docs))
	for _, d := range docs {
		m, ok := d.(map[string]any)
		if !ok {
			t.Fatalf("%s: a document is not a mapping", path)
		}
		out = append(out, m)
	}
	return out
}

// get walks a parsed document: keys for mappings, "0", "1"… for
// sequences. It returns nil when the path does not exist.
func get(v any, path ...string) any {
	for _, p := range path {
		switch c := v.(type) {
		case map[string]any:
			v = c[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

func getString(v any, path ...string) string { s, _ := get(v, path...).(string); return s }

func TestYAMLParses(t *testing.T) {
	files := yamlFiles(t)
	if len(files) < 10 {
		t.Fatalf("found %d YAML files under deploy/: %v", len(files), files)
	}
	for _, f := range files {
		docs := load(t, f)
		if len(docs) == 0 {
			t.Errorf("%s: no document", f)
		}
		if !strings.HasPrefix(f, "k8s"+string(filepath.Separator)) {
			continue
		}
		for i, d := range docs {
			if getString(d, "apiVersion") == "" || getString(d, "kind") == "" {
				t.Errorf("%s document %d: no apiVersion or kind", f, i)
			}
			if getString(d, "kind") != "Kustomization" && getString(d, "metadata", "name") == "" {
				t.Errorf("%s document %d: no metadata.name", f, i)
			}
		}
	}
}

// TestYAMLReaderRejects holds the YAML reader to the files' needs: broken
// YAML, a key written twice or a tag it would misread is an error, never a
// silent misreading; anchors, merges, block and flow collections read as
// written.
func TestYAMLReaderRejects(t *testing.T) {
	for _, bad := range []string{
		"a: 1\n\tb: 2\n", "a: 1\na: 2\n", "a:\n  - 1\n  b: 2\n", "a: [1, 2\n", "a: b: c\n",
		"a: *nowhere\n", "a: 'open\n", "  a: 1\nb: 2\n", "a: !!binary x\n",
	} {
		if _, err := parseYAML(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	docs, err := parseYAML("x: &base\n  a: '1'\n  b: [p, \"q\"]\ny:\n  <<: *base\n  a: \"2\"\n  s: |\n    one\n    two\n# c\nz:\n- k: v\n  l: w\n---\nq: {r: s}\n")
	if err != nil {
		t.Fatal(err)
	}
	if got := getString(docs[0], "y", "a"); got != "2" {
		t.Errorf("merge: y.a = %q, want 2", got)
	}
	if got := getString(docs[0], "y", "b", "1"); got != "q" {
		t.Errorf("merge: y.b[1] = %q, want q", got)
	}
	if got := getString(docs[0], "y", "s"); got != "one\ntwo\n" {
		t.Errorf("block scalar %q", got)
	}
	if got := getString(docs[0], "z", "0", "l"); got != "w" {
		t.Errorf("sequence of mappings: %q", got)
	}
	if got := getString(docs[1], "q", "r"); got != "s" {
		t.Errorf("flow mapping: %q", got)
	}
}

func TestGrafanaDashboardIsJSON(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("grafana", "anteroom.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Datasource *struct {
				UID string `json:"uid"`
			} `json:"datasource"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("anteroom.json: %v", err)
	}
	ds := load(t, filepath.Join("grafana", "provisioning", "datasources", "prometheus.yaml"))
	uid := getString(ds[0], "datasources", "0", "uid")
	seen := map[int]bool{}
	for _, p := range dash.Panels {
		if seen[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		seen[p.ID] = true
		if p.Type != "row" && (p.Datasource == nil || p.Datasource.UID != uid) {
			t.Errorf("panel %d: datasource is not the provisioned %q", p.ID, uid)
		}
	}
	if dash.UID == "" || len(dash.Panels) < 10 {
		t.Errorf("dashboard uid %q with %d panels", dash.UID, len(dash.Panels))
	}
}
