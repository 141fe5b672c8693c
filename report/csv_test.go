package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"testing"
)

// TestWriteCSVParses checks that the CSV parses back, one figure a row,
// with a name that starts like a formula neutralised.
func TestWriteCSVParses(t *testing.T) {
	r := &Report{Event: "e", Name: "=HYPERLINK(\"x\")", Funnel: Funnel{Joined: 7},
		JoinToAdmission: Waits{BoundsSeconds: []int64{1, 5}, Counts: []int64{2, 0, 1}, Count: 3},
		Lanes:           []Lane{{Lane: DefaultLane, Joined: 7, Buyers: 1, Conversion: 1.0 / 7}},
		Refusals:        []Refusal{{Reason: "join.rate_limited", Count: 4}},
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
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
}

// TestLanesHook checks the lanes hook: buyers are split by the lanes'
// users, and the lane without a user list gets the rest.
func TestLanesHook(t *testing.T) {
	b := &Builder{Lanes: func(context.Context, string) ([]LaneCounts, error) {
		return []LaneCounts{{Lane: "members", Joined: 2, Users: map[string]bool{"m": true}}, {Lane: DefaultLane, Joined: 8}}, nil
	}}
	got, err := b.lanes(context.Background(), "e", &Funnel{}, map[string]bool{"m": true, "x": true, "y": true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Lane != "members" || got[0].Buyers != 1 || got[1].Lane != DefaultLane || got[1].Buyers != 2 || got[1].Conversion != 0.25 {
		t.Errorf("lanes %+v, want members 1 buyer of 2, default 2 of 8", got)
	}
}
