package openapi

import (
	"context"
	"github.com/getkin/kin-openapi/openapi3"
	"slices"
	"testing"

	"github.com/anteroom/anteroom/web/kit"
	"go.yaml.in/yaml/v3"
)

// doc is the part of the contract the tests read.
type doc struct {
	OpenAPI    string                    `yaml:"openapi"`
	Paths      map[string]map[string]any `yaml:"paths"`
	Components struct {
		Schemas map[string]struct {
			Enum []string `yaml:"enum"`
		} `yaml:"schemas"`
	} `yaml:"components"`
}

func load(t *testing.T) doc {
	t.Helper()
	var d doc
	if err := yaml.Unmarshal(Spec, &d); err != nil {
		t.Fatalf("openapi.yaml does not parse: %v", err)
	}
	if d.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, want 3.1.0", d.OpenAPI)
	}
	return d
}

// TestOpenAPIErrorCodes: the contract's ErrorCode enum is exactly the
// codes web/kit answers (its error table and its titles), and every code
// but internal has a title of its own.
func TestOpenAPIErrorCodes(t *testing.T) {
	enum := load(t).Components.Schemas["ErrorCode"].Enum
	if len(enum) == 0 {
		t.Fatal("components.schemas.ErrorCode has no enum")
	}
	codes := kit.Codes()
	for _, code := range codes {
		if !slices.Contains(enum, code) {
			t.Errorf("kit answers code %q, missing from the contract's ErrorCode enum", code)
		}
	}
	for _, code := range enum {
		if !slices.Contains(codes, code) {
			t.Errorf("the contract's ErrorCode %q is not a code kit knows (kit.Codes)", code)
		}
		if title := kit.NewProblem(500, code, "").Title; code != "internal" && title == "Internal error" {
			t.Errorf("code %q is titled %q", code, title)
		}
	}
}

// TestOpenAPIDocumentValid: kin-openapi loads the contract as OpenAPI 3.1
// and finds it valid (every $ref resolves, schemas are JSON Schema
// 2020-12, operation ids are unique).
func TestOpenAPIDocumentValid(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(Spec)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("version %q is not 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("invalid: %v", err)
	}
}

// TestOpenAPIRequestIDs: every answer of every operation declares the
// X-Request-ID header, required (the node sets it on every answer), and
// 429 and 503 answers Retry-After.
func TestOpenAPIRequestIDs(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(Spec)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, r := range op.Responses.Map() {
				n++
				h := r.Value.Headers
				if id := h["X-Request-ID"]; id == nil || !id.Value.Required {
					t.Errorf("%s %s %s: no required X-Request-ID header", method, path, status)
				}
				if ra := h["Retry-After"]; (status == "429" || status == "503") && (ra == nil || !ra.Value.Required) {
					t.Errorf("%s %s %s: no required Retry-After header", method, path, status)
				}
			}
		}
	}
	if n < 300 {
		t.Fatalf("%d answers in the contract: the walk is broken", n)
	}
}
