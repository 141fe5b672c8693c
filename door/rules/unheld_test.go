package rules

import (
	"net/netip"
	"strconv"
	"testing"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
)

// unheldLists holds no list: every list answers Unknown (a node whose
// first read of the lists failed).
type unheldLists struct{}

func (unheldLists) User(string, string) door.Membership     { return door.Unknown }
func (unheldLists) Addr(string, netip.Addr) door.Membership { return door.Unknown }
func (unheldLists) Hash(user string) uint64                 { return uint64(len(user)) }

// TestInListUnheld: in_list over a list the node does not hold is
// neither true nor false. A rule whose outcome depends on it holds when
// its then refuses or queues (block, challenge, sink, queue) and does
// not hold when it bypasses, whichever way the expression turns it
// (negated, in a disjunction); a rule whose outcome does not depend on
// it decides as usual.
func TestInListUnheld(t *testing.T) {
	e := New(unheldLists{}, nil)
	r := request("GET", "/", "", "203.0.113.7", "ann", nil, nil)
	for i, tc := range []struct {
		when, then string
		want       bool
	}{
		{`in_list("vip", user)`, "bypass", false},
		{`!in_list("vip", user)`, "bypass", false},
		{`in_list("office", request.ip)`, "bypass", false},
		{`in_list("resellers", user)`, "block", true},
		{`!in_list("partners", user)`, "block", true},
		{`!in_list("office", request.ip)`, "sink", true},
		{`in_list("bots", user)`, "challenge", true},
		{`in_list("vip", user)`, "queue", true},
		{`in_list("vip", user) || true`, "bypass", true},  // decided without the list
		{`in_list("vip", user) && false`, "block", false}, // decided without the list
	} {
		cfg := &event.Config{ID: "u" + strconv.Itoa(i), Door: event.Door{Rules: []event.Rule{rule("r", tc.when, tc.then)}}}
		if _, then, ok := e.Match(cfg, r); ok != tc.want || ok && then.String() != tc.then {
			t.Errorf("%s then %s: holds %v (%s), want %v", tc.when, tc.then, ok, then, tc.want)
		}
	}
}
