package report

import (
	"reflect"
	"testing"

	"github.com/anteroom/anteroom/event"
)

// TestDoorOf: the door section lists the sale's rules in its order with
// their matches (0 for none), then rules no longer in the sale by name;
// takes the rules' fields out of the refusals and the door's joins from
// them; and says lottery + an eligibility list is a lottery among
// pre-registered users, and nothing else is.
func TestDoorOf(t *testing.T) {
	cfg := &event.Config{Mode: event.Lottery, Door: event.Door{
		Rules:         []event.Rule{{Name: "zeta", Then: "sink"}, {Name: "alpha", Then: "bypass"}},
		EligibleLists: []string{"registered"},
	}}
	counted := map[string]int64{
		"rule.alpha": 3, "rule.old": 2, "rule.gone": 1, "join.blocked": 4, "join.not_eligible": 5,
		"join.sink": 6, "claim.blocked": 7, "join.rate_limited": 8,
	}
	d, rest := doorOf(cfg, counted)
	want := Door{
		Rules: []RuleMatches{
			{Rule: "zeta", Then: "sink"}, {Rule: "alpha", Then: "bypass", Matches: 3},
			{Rule: "gone", Matches: 1, Removed: true}, {Rule: "old", Matches: 2, Removed: true},
		},
		Blocked: 4, NotEligible: 5, Sunk: 6, EligibleLists: []string{"registered"}, PreRegisteredLottery: true,
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("door %+v, want %+v", d, want)
	}
	wantRest := map[string]int64{"join.blocked": 4, "join.not_eligible": 5, "join.sink": 6, "claim.blocked": 7, "join.rate_limited": 8}
	if !reflect.DeepEqual(rest, wantRest) {
		t.Fatalf("refusals %v, want %v", rest, wantRest)
	}
	cfg.Door.EligibleLists[0] = "changed" // the section holds its own copy
	if d.EligibleLists[0] != "registered" {
		t.Fatal("the door section shares the configuration's list")
	}
	for _, c := range []struct {
		mode  event.Mode
		lists []string
		want  bool
	}{
		{event.Lottery, nil, false}, {event.FCFS, []string{"registered"}, false},
		{event.SafetyNet, []string{"registered"}, false}, {event.Lottery, []string{"a", "b"}, true},
	} {
		cfg := &event.Config{Mode: c.mode, Door: event.Door{EligibleLists: c.lists}}
		if got := PreRegisteredLottery(cfg); got != c.want {
			t.Errorf("mode %s, lists %v: %v, want %v", c.mode, c.lists, got, c.want)
		}
	}
	if d, _ := doorOf(&event.Config{}, nil); d.Rules == nil || d.EligibleLists == nil {
		t.Errorf("a sale without a door: %+v, want empty lists (JSON [] not null)", d)
	}
}
