package shopper

import (
	"reflect"
	"testing"

	"github.com/anteroom/anteroom/web/openapi/conform"
)

// TestContractShapes: the shopper and shop bodies in the contract have
// exactly the fields of their Go values (see conform.Shape); status and
// join answers are written by hand (appendStatus, appendJoin) from the
// same structs.
func TestContractShapes(t *testing.T) {
	c, err := conform.Shared()
	if err != nil {
		t.Fatal(err)
	}
	type (
		finished struct {
			JTI      string `json:"jti"`
			Position int64  `json:"position"`
			Finished bool   `json:"finished"`
			Replay   bool   `json:"replay"`
		}
		health struct {
			Healthy bool `json:"healthy"`
			Held    bool `json:"held"`
			Changed bool `json:"changed"`
		}
	)
	for _, e := range c.Shapes([]conform.Shaped{
		{Op: "getEvent", Status: 200, Value: PublicEvent{}},
		{Op: "status", Status: 200, Value: statusJSON{}},
		{Op: "claim", Status: 201, Value: claimJSON{}},
		{Op: "claim", Status: 200, Value: claimJSON{}},
		{Op: "listClaims", Status: 200, Value: claimListJSON{}},
		{Op: "getClaim", Status: 200, Value: recordJSON{}},
		{Op: "releaseClaim", Status: 200, Value: recordJSON{}},
		{Op: "finishSession", Status: 200, Value: finished{}},
		{Op: "pushHealth", Value: healthPush{}},
		{Op: "pushHealth", Status: 200, Value: health{}},
	}) {
		t.Error(e)
	}
	// join answers one of two bodies.
	for name, v := range map[string]any{"Joined": roomJoinJSON{}, "Admitted": passJoinJSON{}} {
		s, err := c.Component(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range conform.Shape(s, reflect.TypeOf(v), conform.Answer) {
			t.Errorf("%s: %s", name, e)
		}
	}
}
