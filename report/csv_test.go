package report

import (
	"bytes"
	"encoding/csv"
	"reflect"
	"testing"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// TestWriteCSVParses checks that the CSV parses back, one figure a row,
// with a name that starts like a formula neutralised and a negative
// figure left a number.
func TestWriteCSVParses(t *testing.T) {
	r := &Report{Event: "e", Name: "=HYPERLINK(\"x\")", Funnel: Funnel{Joined: 7},
		JoinToAdmission: Waits{BoundsSeconds: []int64{1, 5}, Counts: []int64{2, 0, 1}, Count: 3},
		Lanes:           []Lane{{Lane: DefaultLane, Joined: 7, Buyers: 1, Conversion: 1.0 / 7}},
		Refusals:        []Refusal{{Reason: "join.rate_limited", Count: 4}},
		Passes:          admission.PassCounts{Minted: 3, Refused: 1},
		Door: Door{Rules: []RuleMatches{{Rule: "bots", Then: "sink", Matches: 9}, {Rule: "old", Matches: 2, Removed: true}},
			Blocked: 1, NotEligible: 2, Sunk: 3, EligibleLists: []string{"a", "b"}, PreRegisteredLottery: true},
		ETAError: []ETAError{{Lane: DefaultLane, Stride: 2, People: 5, Points: []ETAPoint{
			{At: "join", Count: 5, MedianAbs: 0.25, P90Abs: 1.5, Median: -0.125},
		}}},
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v", err)
	}
	got := map[string]string{}
	for _, rec := range recs[1:] {
		got[rec[0]+"/"+rec[1]] = rec[2]
	}
	for k, want := range map[string]string{
		"event/name": "'=HYPERLINK(\"x\")", "funnel/joined": "7", "join_to_admission/le_1s": "2",
		"join_to_admission/gt_5s": "1", "lane:default/conversion": "0.1429", "refusals/join.rate_limited": "4",
		"passes/minted": "3", "passes/refused": "1", "passes/redeemed": "0",
		"door/blocked": "1", "door/not_eligible": "2", "door/sunk": "3", "door/eligible_lists": "a b",
		"door/pre_registered_lottery": "true", "door:rule:bots/then": "sink", "door:rule:bots/matches": "9",
		"door:rule:bots/removed": "false", "door:rule:old/then": "", "door:rule:old/matches": "2", "door:rule:old/removed": "true",
		"eta_error:default/people": "5", "eta_error:default/stride": "2", "eta_error:default/join_count": "5",
		"eta_error:default/join_median_abs_error": "0.2500", "eta_error:default/join_p90_abs_error": "1.5000",
		"eta_error:default/join_median_error": "-0.1250", // a sign, not a formula
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}

// TestLanesOf checks the split of claims by lane: each claim goes to the
// lane of its position, a bypass pass's to the pass row (which shows once
// a pass was minted), conversion is buyers over admitted, and a position
// of no configured lane counts in no row.
func TestLanesOf(t *testing.T) {
	cfg := &event.Config{Lanes: []event.Lane{{Name: "members"}}}
	o := orderTotals{lanes: map[int]*laneOrders{}}
	for _, c := range []struct {
		user string
		pos  int64
	}{{"a", 3}, {"b", 5}, {"b", 6}, {"m", queue.Laned(1, 1)}, {"p", admission.PassPosition}, {"x", queue.Laned(7, 1)}} {
		lo := o.lane(laneOf(c.pos))
		lo.buyers[c.user] = true
		lo.units++
	}
	queues := []admission.LaneTally{{Joined: 10, Frontier: 4}, {Joined: 2, Frontier: 9}}
	got := lanesOf(cfg, queues, &o, admission.PassCounts{Minted: 1, Redeemed: 2})
	want := []Lane{
		{Lane: DefaultLane, Joined: 10, Admitted: 4, Buyers: 2, UnitsGranted: 3, Conversion: 0.5},
		{Lane: "members", Joined: 2, Admitted: 2, Buyers: 1, UnitsGranted: 1, Conversion: 0.5},
		{Lane: PassLane, Admitted: 2, Buyers: 1, UnitsGranted: 1, Conversion: 0.5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lanes\n%+v\nwant\n%+v", got, want)
	}
	if got := lanesOf(cfg, queues[:1], &orderTotals{lanes: map[int]*laneOrders{}}, admission.PassCounts{}); len(got) != 1 || got[0].Lane != DefaultLane {
		t.Errorf("no lanes, no passes: %+v, want the default lane alone", got)
	}
}
