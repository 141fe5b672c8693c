package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/web/openapi"
	"go.yaml.in/yaml/v3"
)

// contractRoutes are the contract's operations as "METHOD /path" with
// OpenAPI's {param} templates.
func contractRoutes(t *testing.T) map[string]bool {
	t.Helper()
	var d struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(openapi.Spec, &d); err != nil {
		t.Fatalf("the contract does not parse: %v", err)
	}
	out := map[string]bool{}
	for path, item := range d.Paths {
		for key := range item {
			switch key {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				out[strings.ToUpper(key)+" "+normalPath(path)] = true
			}
		}
	}
	return out
}

// normalPath writes a fiber route (/events/:id/) or a contract path
// (/events/{id}) one way: {param} templates, no trailing slash (routing is
// not strict, so /events/ev and /events/ev/ are one route).
func normalPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			parts[i] = "{" + name + "}"
		}
	}
	p = strings.Join(parts, "/")
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	return p
}

// TestOpenAPIRoutes: every route the node registers is in the contract,
// and every operation of the contract is a registered route. The app is
// built with every optional route on (metrics, the demo's sign-in
// links). HEAD routes are fiber's
// automatic twins of GET routes: each must have its GET, and the contract
// lists the GET only.
func TestOpenAPIRoutes(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	app := mustNew(t, Config{AdminToken: testAdminToken, Log: log},
		Deps{Sales: consoleSales{sale: testSale()}, Metrics: http.NotFoundHandler(), SignInLinks: fakeLinks{}})
	served := map[string]bool{}
	for _, r := range app.GetRoutes(true) { // handlers only, not middleware
		served[r.Method+" "+normalPath(r.Path)] = true
	}
	contract := contractRoutes(t)
	if len(served) < 50 || len(contract) < 50 {
		t.Fatalf("%d routes served, %d in the contract: the walk is broken", len(served), len(contract))
	}
	var missing, extra []string
	for route := range served {
		if path, ok := strings.CutPrefix(route, "HEAD "); ok {
			if !served["GET "+path] {
				t.Errorf("%s has no GET twin", route)
			}
			continue
		}
		if !contract[route] {
			missing = append(missing, route)
		}
	}
	for route := range contract {
		if !served[route] {
			extra = append(extra, route)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	for _, r := range missing {
		t.Errorf("served but missing from web/openapi/openapi.yaml: %s", r)
	}
	for _, r := range extra {
		t.Errorf("in web/openapi/openapi.yaml but not served: %s", r)
	}
}

// TestOpenAPIServed: the node serves the contract without credentials,
// cacheable, as YAML.
func TestOpenAPIServed(t *testing.T) {
	app := testApp(t)
	resp, err := app.Test(httptest.NewRequest(http.MethodGet, openapi.Path, nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", openapi.Path, resp.StatusCode, body)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/yaml" {
		t.Errorf("Content-Type = %q", got)
	}
	if got := resp.Header.Get("Cache-Control"); !strings.HasPrefix(got, "public, max-age=") {
		t.Errorf("Cache-Control = %q, want public and cacheable", got)
	}
	if string(body) != string(openapi.Spec) {
		t.Error("the body is not the embedded contract")
	}
}
