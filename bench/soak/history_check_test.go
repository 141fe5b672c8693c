//go:build soak && linux

package soak

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHistoryCatches feeds the history checker short histories that break
// one promise each, and one that breaks none: the soak's verdict is only
// as good as this.
func TestHistoryCatches(t *testing.T) {
	granted := func(user, key, id string) op {
		return op{Sale: "s", User: user, Kind: "claim", Key: key, Status: http.StatusCreated, ClaimID: id}
	}
	// Staff held the sale from 10 s ago (node 0 answered); the ops below
	// were sent 5 s ago, on node 0 or another node.
	t0 := time.Now()
	held := func(what string) []hold { return []hold{{what: what, node: "0", from: t0.Add(-10 * time.Second)}} }
	during := func(o op, node string) op {
		o.Node, o.Start, o.At = node, t0.Add(-5*time.Second), t0.Add(-4*time.Second)
		return o
	}
	// after is o sent n seconds after t0 and answered 100 ms later.
	after := func(n int, o op) op {
		o.Start = t0.Add(time.Duration(n) * time.Second)
		o.At = o.Start.Add(100 * time.Millisecond)
		return o
	}
	cases := []struct {
		name  string
		holds []hold
		ops   []op
		want  string // "" = no violation
	}{
		{"healthy", nil, []op{
			{Sale: "s", User: "a", Kind: "join", Status: 200, Pos: 1},
			{Sale: "s", User: "b", Kind: "join", Status: 200, Pos: 2},
			{Sale: "s", User: "a", Kind: "claim", Key: "k0", Status: 503, Code: "degraded", Retry: true},
			granted("a", "k0", "c1"), {Sale: "s", User: "a", Kind: "replay", Key: "k0", Status: 200, ClaimID: "c1"},
			granted("a", "k1", "c2"),
			{Sale: "s", User: "a", Kind: "release", Status: 200, ClaimID: "c2"},
			granted("a", "k2", "c3"),
		}, ""},
		{"idempotency", nil, []op{granted("a", "k0", "c1"), granted("a", "k0", "c2")}, "Idempotency-Key"},
		{"limit", nil, []op{granted("a", "k0", "c1"), granted("a", "k1", "c2"), granted("a", "k2", "c3")}, "limit 2"},
		{"supply", nil, []op{granted("a", "k0", "c1"), granted("b", "k0", "c2"), granted("c", "k0", "c3"), granted("d", "k0", "c4")}, "supply 3"},
		{"positions", nil, []op{{Sale: "s", User: "a", Kind: "join", Status: 200, Pos: 1}, {Sale: "s", User: "b", Kind: "join", Status: 200, Pos: 1}}, "position 1"},
		{"500", nil, []op{{Sale: "s", User: "a", Kind: "claim", Status: 500, Code: "internal"}}, "5xx"},
		{"503 without Retry-After", nil, []op{{Sale: "s", User: "a", Kind: "status", Status: 503, Code: "degraded"}}, "5xx"},
		{"confirmed released", nil, []op{granted("a", "k0", "c1"),
			{Sale: "s", User: "a", Kind: "lookup", Status: 200, ClaimID: "c1", State: "confirmed"},
			{Sale: "s", User: "a", Kind: "release", Status: 200, ClaimID: "c1"}}, "released after it was seen confirmed"},
		{"joined while closed", held("closed"), []op{during(op{Sale: "s", User: "a", Kind: "join", Status: 200, Pos: 1}, "0")}, "while staff had it closed"},
		{"form join while closed", held("closed"), []op{during(op{Sale: "s", User: "a", Kind: "bjoin", Status: http.StatusSeeOther}, "1")}, "while staff had it closed"},
		{"admitted while paused", held("paused"), []op{during(op{Sale: "s", User: "a", Kind: "status", Status: 200, State: "admitted"}, "2")}, "admitted to sale s while staff had it paused"},
		{"sold while closed", held("closed"), []op{during(granted("a", "k0", "c1"), "0")}, "granted in sale s while staff had it closed"},
		{"held, nothing let through", held("closed"), []op{
			during(op{Sale: "s", User: "a", Kind: "join", Status: 503, Code: "closed", Retry: true}, "0"),
			during(op{Sale: "s", User: "b", Kind: "status", Status: 200, State: "closed"}, "1"),
			during(op{Sale: "s", User: "b", Kind: "claim", Status: 503, Code: "closed", Retry: true}, "1"),
		}, ""},
		{"joined while paused", held("paused"), []op{during(op{Sale: "s", User: "a", Kind: "join", Status: 200, Pos: 1}, "0")}, ""},
		{"admitted on another node within its slack", []hold{{what: "paused", node: "0", from: t0.Add(-5*time.Second - holdSlack/2)}},
			[]op{during(op{Sale: "s", User: "a", Kind: "status", Status: 200, State: "admitted"}, "1")}, ""},
		// Staff cancellations (issue 36).
		{"a cancel with restock frees its unit, keeps the slot", nil, []op{granted("a", "k0", "c1"), granted("b", "k0", "c2"), granted("c", "k0", "c3"),
			after(1, op{Sale: "s", User: "c", Kind: "cancel", Key: "restock", Status: 200, ClaimID: "c3"}),
			after(2, op{Sale: "s", User: "c", Kind: "cancel", Status: 409, Code: "not_cancellable", ClaimID: "c3"}),
			after(3, op{Sale: "s", User: "c", Kind: "claim", Key: "k1", Status: 409, Code: "signal_limit"}),
			after(4, granted("d", "k0", "c4")),
			after(5, op{Sale: "s", User: "c", Kind: "lookup", Status: 200, ClaimID: "c3", State: "cancelled"}),
		}, ""},
		{"a void cancel keeps its unit sold", nil, []op{granted("a", "k0", "c1"), granted("b", "k0", "c2"), granted("c", "k0", "c3"),
			after(1, op{Sale: "s", User: "c", Kind: "cancel", Status: 200, ClaimID: "c3"}),
			after(2, granted("d", "k0", "c4"))}, "supply 3"},
		{"cancelled twice", nil, []op{granted("a", "k0", "c1"),
			after(1, op{Sale: "s", User: "a", Kind: "cancel", Status: 200, ClaimID: "c1"}),
			after(2, op{Sale: "s", User: "a", Kind: "cancel", Key: "restock", Status: 200, ClaimID: "c1"})}, "cancelled twice"},
		{"cancelled after its release", nil, []op{granted("a", "k0", "c1"),
			after(1, op{Sale: "s", User: "a", Kind: "release", Status: 200, ClaimID: "c1"}),
			after(2, op{Sale: "s", User: "a", Kind: "cancel", Status: 200, ClaimID: "c1"})}, "cancelled after its release"},
		{"released after its cancel", nil, []op{granted("a", "k0", "c1"),
			after(1, op{Sale: "s", User: "a", Kind: "cancel", Status: 200, ClaimID: "c1"}),
			after(2, op{Sale: "s", User: "a", Kind: "release", Status: 200, ClaimID: "c1"})}, "released after staff cancelled it"},
		{"a cancelled claim looked up pending", nil, []op{granted("a", "k0", "c1"),
			after(1, op{Sale: "s", User: "a", Kind: "cancel", Status: 200, ClaimID: "c1"}),
			after(2, op{Sale: "s", User: "a", Kind: "lookup", Status: 200, ClaimID: "c1", State: "pending"})}, "its lookup answered"},
		{"max_active", nil, func() []op {
			var out []op
			for _, u := range []string{"a", "b", "c", "d", "e", "f"} {
				out = append(out, op{Sale: "s", User: u, Kind: "status", Status: 200, State: "admitted"})
			}
			return out
		}(), "max_active 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory()
			h.open("s", 3, 2, 2)
			h.holds["s"] = tc.holds
			for _, o := range tc.ops {
				h.record(o)
			}
			select {
			case v := <-h.found:
				if tc.want == "" || !strings.Contains(v.What, tc.want) {
					t.Fatalf("violation %q, want %q\n%s", v.What, tc.want, v.render(1))
				}
				if len(v.Ops) == 0 {
					t.Fatal("no history around the violation")
				}
			default:
				if tc.want != "" {
					t.Fatalf("no violation, want %q", tc.want)
				}
			}
		})
	}
}

// TestFrontierAllowance checks the sampler's two measures: the highest
// rate in effect over a window (a change inside it counts from the start),
// and the positions that may be no-shows (no admission fetched, or no
// client told).
func TestFrontierAllowance(t *testing.T) {
	t0 := time.Now()
	ss := &sales{rates: map[string][]rateAt{"s": {{t0, 5}, {t0.Add(10 * time.Second), 9}, {t0.Add(20 * time.Second), 2}}}}
	for _, tc := range []struct {
		from, to time.Duration
		want     float64
	}{{0, 5 * time.Second, 5}, {5 * time.Second, 12 * time.Second, 9}, {21 * time.Second, 30 * time.Second, 2}, {15 * time.Second, 25 * time.Second, 9}} {
		if got := ss.maxRate("s", t0.Add(tc.from), t0.Add(tc.to)); got != tc.want {
			t.Errorf("maxRate %s..%s = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	h := newHistory()
	h.open("s", 10, 2, 0)
	for p, u := range map[int64]string{1: "a", 2: "b", 3: "c", 5: "e"} {
		h.record(op{Sale: "s", User: u, Kind: "join", Status: 200, Pos: p})
	}
	h.record(op{Sale: "s", User: "a", Kind: "status", Status: 200, State: "admitted", At: t0})
	h.record(op{Sale: "s", User: "c", Kind: "status", Status: 200, State: "admitted", At: t0.Add(time.Minute)})
	// b fetched nothing, 4 nobody was told, c fetched after the window, e nothing.
	if got := h.noShows("s", 0, 5, t0.Add(time.Second)); got != 4 {
		t.Errorf("noShows = %d, want 4", got)
	}
}

// TestPaceCatchesBurst: the sampler's pace check passes a frontier moving
// at the rate, and stops one that jumps by rate × a 4 s gap within a
// second (the catch-up after a Redis pause that advance.lua now caps).
func TestPaceCatchesBurst(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		name string
		to   float64
		want bool
	}{{"at the rate", 5, false}, {"rate plus one step's credit", 10, false}, {"catch-up of a 4 s gap", 25, true}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory()
			h.open("s", 150, 2, 0)
			ss := &sales{h: h, rates: map[string][]rateAt{"s": {{t0.Add(-time.Minute), 5}}}}
			ss.checkPace("s", frame{t0, 0}, frame{t0.Add(time.Second), tc.to}, 0, false)
			select {
			case v := <-h.found:
				if !tc.want {
					t.Fatalf("violation %q for a frontier within the allowance", v.What)
				}
			default:
				if tc.want {
					t.Fatal("no violation for a burst above the rate")
				}
			}
		})
	}
}
