package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/queue"
)

// runVerify runs `anteroom verify args...` and returns its output.
func runVerify(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), append([]string{"verify"}, args...), func(string) string { return "" }, &out, &errb)
	if err != nil {
		return out.String(), fmt.Errorf("%w (%s)", err, errb.String())
	}
	return out.String(), nil
}

// writeEvent writes v as an event JSON file and returns its path.
func writeEvent(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(name, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestVerifyLane recomputes lane members' positions: a ticket's seq names
// its lane (queue.Laned) and the lane's own window W_lane orders its
// members by the event's seed, from the flags or from the event JSON
// (each lane's window_size), by the seq or by --lane and the number
// within the lane. Inconsistent figures are refused.
func TestVerifyLane(t *testing.T) {
	seedHex := strings.Repeat("5a", 32)
	seed, _ := queue.ParseSeedHex(seedHex)
	perm := func(w, n int64) int64 {
		p, err := queue.NewPermutation(seed, w)
		if err != nil {
			t.Fatal(err)
		}
		return queue.Position(p, n)
	}
	lanePerm := func(l int, w, n int64) int64 {
		p, err := queue.NewPermutation(queue.LaneSeed(seed, l), w)
		if err != nil {
			t.Fatal(err)
		}
		return queue.Position(p, n)
	}
	w := func(n int64) *int64 { return &n }
	type lane struct {
		Name       string `json:"name"`
		WindowSize *int64 `json:"window_size,omitempty"`
	}
	pub := map[string]any{"id": "sale", "seed_commitment": queue.Commitment(seed), "seed": seedHex, "window_size": 40,
		"lanes": []lane{{"members", w(5)}, {"partner", w(12)}, {"late", nil}}}
	ev := writeEvent(t, pub)
	seq := func(l int, n int64) string { return fmt.Sprint(queue.Laned(l, n)) }
	cases := []struct {
		args []string
		want int64
	}{
		{[]string{"--seed", seedHex, "--window", "5", "--seq", seq(1, 3)}, lanePerm(1, 5, 3)},
		{[]string{"--seed", seedHex, "--window", "5", "--seq", seq(1, 9)}, 9},
		{[]string{"--seed", seedHex, "--window", "5", "--shared-lane-seed", "--seq", seq(1, 3)}, perm(5, 3)},
		{[]string{"--seed", seedHex, "--lane-seed", "2", "--window", "12", "--seq", "7"}, lanePerm(2, 12, 7)}, // the waiting room's command
		{[]string{"--seed", seedHex, "--lane-seed", "2", "--window", "12", "--seq", seq(2, 7)}, lanePerm(2, 12, 7)},
		{[]string{"--event", ev, "--seq", seq(1, 3)}, perm(5, 3)},
		{[]string{"--event", ev, "--seq", seq(2, 12)}, perm(12, 12)},
		{[]string{"--event", ev, "--seq", seq(2, 13)}, 13},
		{[]string{"--event", ev, "--lane", "partner", "--seq", "7"}, perm(12, 7)},
		{[]string{"--event", ev, "--lane", "partner", "--seq", seq(2, 7)}, perm(12, 7)},
		{[]string{"--event", ev, "--seq", "17"}, perm(40, 17)},
	}
	// An event created with lane seeds says so: each lane draws with its own.
	pub["lane_seeds"] = true
	own := writeEvent(t, pub)
	delete(pub, "lane_seeds")
	cases = append(cases, []struct {
		args []string
		want int64
	}{
		{[]string{"--event", own, "--seq", seq(1, 3)}, lanePerm(1, 5, 3)},
		{[]string{"--event", own, "--lane", "partner", "--seq", "7"}, lanePerm(2, 12, 7)},
		{[]string{"--event", own, "--seq", "17"}, perm(40, 17)},
	}...)
	sharded := writeEvent(t, map[string]any{"id": "spread", "seed_commitment": queue.Commitment(seed), "seed": seedHex,
		"window_size": 10, "shard_window_sizes": []int64{3, 0, 5, 2}})
	cases = append(cases, struct {
		args []string
		want int64
	}{[]string{"--event", sharded, "--shard", "2", "--seq", "5"}, perm(10, 3+5)})
	for _, tc := range cases {
		out, err := runVerify(t, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !strings.Contains(out, fmt.Sprintf("position %d\n", tc.want)) {
			t.Errorf("%v: got %q, want position %d", tc.args, out, tc.want)
		}
	}
	pub["seed_commitment"] = strings.Repeat("0", 64)
	forged := writeEvent(t, pub)
	for _, bad := range [][]string{
		{"--event", ev, "--lane", "members", "--seq", seq(2, 1)},                     // the seq's lane is another
		{"--event", ev, "--lane", "nobody", "--seq", "1"},                            // no such lane
		{"--event", ev, "--seq", seq(3, 1)},                                          // the lane has no window yet
		{"--event", ev, "--seq", seq(4, 1)},                                          // a lane the event lacks
		{"--event", forged, "--seq", seq(1, 1)},                                      // the seed is not the committed one
		{"--event", ev, "--seed", seedHex, "--seq", "1"},                             // two sources of figures
		{"--event", ev, "--shared-lane-seed", "--seq", seq(1, 1)},                    // the JSON says which seed
		{"--seed", seedHex, "--lane-seed", "1", "--window", "5", "--seq", seq(2, 1)}, // another lane than the seq's
		{"--seed", seedHex, "--lane-seed", "9", "--window", "5", "--seq", "1"},       // no such lane index
		{"--seed", seedHex, "--window", "5", "--lane", "members", "--seq", "1"},      // --lane without --event
		{"--seed", seedHex, "--window", "5", "--seq", seq(1, 0)},                     // no number within the lane
		{"--event", filepath.Join(t.TempDir(), "missing.json"), "--seq", "1"},
	} {
		if out, err := runVerify(t, bad...); err == nil {
			t.Errorf("%v: accepted (%q), want an error", bad, out)
		}
	}
}
