package kit_test

import (
	"reflect"
	"testing"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/anteroom/anteroom/web/openapi/conform"
)

// TestContractProblem: the contract's Problem has exactly the fields of
// kit.Problem, the body of every refusal (see conform.Shape).
func TestContractProblem(t *testing.T) {
	c, err := conform.Shared()
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Component("Problem")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range conform.Shape(s, reflect.TypeFor[kit.Problem](), conform.Answer) {
		t.Error(e)
	}
}
