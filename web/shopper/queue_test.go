package shopper

import (
	"encoding/json"
	"testing"

	"github.com/anteroom/anteroom/admission"
)

// TestAppendStatus checks the hand-written encoder against encoding/json.
func TestAppendStatus(t *testing.T) {
	pos := int64(42)
	for _, s := range []statusJSON{
		{State: admission.Waiting, Position: &pos, Ahead: 41, ETASeconds: 7, PollAfterMs: 1500},
		{State: admission.Prequeue, ETASeconds: 3, PollAfterMs: 2000},
		{State: admission.SoldOut, Position: &pos, PollAfterMs: 30000},
		{State: admission.Closed, Position: &pos, Ahead: 41, PollAfterMs: 30000, ClosedBy: "staff"},
	} {
		want, _ := json.Marshal(s)
		if got := appendStatus(nil, &s); string(got) != string(want) {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

// TestAppendJoin checks join's hand-written encoder against encoding/json.
func TestAppendJoin(t *testing.T) {
	pos := int64(7)
	for _, j := range []joinJSON{
		{Ticket: "eyJh.eyJl.c2ln-_", Seq: 7, Position: &pos, State: admission.Waiting, PollAfterMs: 1500},
		{Ticket: "a.b.c", Seq: 1, State: admission.Prequeue, PollAfterMs: 2000},
		{Ticket: "a.b.c", Seq: 99, State: admission.Admitted, Position: &pos},
		{Ticket: "a.b.c", Seq: 1<<40 | 3, State: admission.Waiting, Position: &pos, Lane: "members-2"},
	} {
		want, _ := json.Marshal(j)
		if got := appendJoin(nil, &j); string(got) != string(want) {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
