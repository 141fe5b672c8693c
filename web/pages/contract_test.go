package pages

import (
	"slices"
	"testing"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/openapi"
	"github.com/anteroom/anteroom/web/openapi/conform"
	"go.yaml.in/yaml/v3"
)

// TestContractShapes: the page admin bodies in the contract have exactly
// the fields of their Go values (see conform.Shape).
func TestContractShapes(t *testing.T) {
	c, err := conform.Shared()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Shapes([]conform.Shaped{
		{Op: "getPage", Status: 200, Value: pageJSON{}},
		{Op: "putPageDraft", Value: event.Page{}},
		{Op: "putPageDraft", Status: 200, Value: pageJSON{}},
		{Op: "publishPage", Value: publishJSON{}},
		{Op: "publishPage", Status: 200, Value: pageJSON{}},
	}) {
		t.Error(e)
	}
}

// TestContractLanguages: the contract's Lang parameter lists exactly the
// languages the room has.
func TestContractLanguages(t *testing.T) {
	var doc struct {
		Components struct {
			Parameters map[string]struct {
				Schema struct {
					Enum []string `yaml:"enum"`
				} `yaml:"schema"`
			} `yaml:"parameters"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(openapi.Spec, &doc); err != nil {
		t.Fatal(err)
	}
	got, want := doc.Components.Parameters["Lang"].Schema.Enum, languageCodes()
	if !slices.Equal(got, want) {
		t.Errorf("the contract's Lang is %q, the room's languages %q", got, want)
	}
}
