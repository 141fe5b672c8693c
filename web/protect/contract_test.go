package protect

import (
	"reflect"
	"testing"

	"github.com/anteroom/anteroom/web/openapi/conform"
)

// TestContractShapes: the proof-of-work challenge and the join defences
// of the admin view (the contract's Friction) have exactly the fields of
// their Go values (see conform.Shape).
func TestContractShapes(t *testing.T) {
	c, err := conform.Shared()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Shapes([]conform.Shaped{{Op: "challenge", Status: 200, Value: challengeJSON{}}}) {
		t.Error(e)
	}
	s, err := c.Component("Friction")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range conform.Shape(s, reflect.TypeFor[Friction](), conform.Answer, "Rate") {
		t.Errorf("Friction: %s", e)
	}
}
