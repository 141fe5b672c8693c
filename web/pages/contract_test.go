package pages

import (
	"testing"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/openapi/conform"
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
