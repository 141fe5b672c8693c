//go:build soak && linux

package soak

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestDoorCatches feeds the door's checks (doorbook_test.go) histories
// that break one of its promises each, and healthy ones: blocked people,
// sunk bots and people off an eligibility list let in, members refused,
// and a door change mid-sale that a node ignores past its slack.
func TestDoorCatches(t *testing.T) {
	t0 := time.Now()
	// The lists were loaded a minute ago; the ops below were sent 5 s ago.
	at := func(o op, node string, sent time.Duration) op {
		o.Sale, o.Node, o.Start, o.At = "s", node, t0.Add(-sent), t0.Add(-sent+100*time.Millisecond)
		return o
	}
	now := func(o op) op { return at(o, "0", 5*time.Second) }
	block := doorChange{what: "block", at: t0.Add(-10 * time.Second), users: map[string]bool{"u7": true}}
	sink := doorChange{what: "sink", node: "1", at: t0.Add(-10 * time.Second), cohort: "c3"}
	cases := []struct {
		name    string
		changes []doorChange
		ops     []op
		want    string // "" = no violation
	}{
		{"healthy", []doorChange{block, sink}, []op{
			now(op{User: "blk1", Door: "blocked", Kind: "join", Status: 403, Code: "blocked"}),
			now(op{User: "blk1", Door: "blocked", Kind: "status", Status: 403, Code: "blocked"}),
			now(op{User: "blk2", Door: "blocked", Kind: "join", Status: 503, Code: "degraded", Retry: true}),
			now(op{User: "bot1", Door: "bot", Kind: "join", Status: 200, Pos: 1, State: "waiting"}),
			now(op{User: "bot1", Door: "bot", Kind: "status", Status: 200, State: "waiting"}),
			now(op{User: "bot2", Door: "bot", Kind: "join", Status: 403, Code: "blocked"}), // a block list's false positive
			now(op{User: "u1", Door: "offlist", Kind: "join", Status: 403, Code: "not_eligible"}),
			now(op{User: "m1", Door: "member", Kind: "join", Status: 200, Pos: 1}),
			now(op{User: "m1", Door: "member", Kind: "status", Status: 403, Code: "blocked"}), // errs toward refusing
			now(op{User: "u7", Cohort: "c1", Kind: "status", Status: 403, Code: "blocked"}),
			now(op{User: "u7", Cohort: "c1", Kind: "claim", Status: 403, Code: "blocked", Key: "k0"}),
			now(op{User: "u8", Cohort: "c3", Kind: "status", Status: 200, State: "waiting"}),
			now(op{User: "u8", Cohort: "c3", Kind: "claim", Status: 401, Code: "unauthenticated", Key: "k0"}),
			// Sunk by the cohort's rule: the sink's places, not theirs.
			now(op{User: "x2", Door: "offlist", Cohort: "c3", Kind: "join", Status: 200, Pos: 1, State: "waiting"}),
			now(op{User: "u10", Cohort: "c3", Kind: "join", Status: 200, Pos: 1, State: "waiting"}),
			// Sent within the slack of the change: the node may not know it yet.
			at(op{User: "u7", Cohort: "c1", Kind: "status", Status: 200, State: "admitted", Token: true}, "2", 10*time.Second-listSlack/2),
			at(op{User: "u9", Cohort: "c3", Kind: "claim", Status: 201, ClaimID: "c9", Key: "k0"}, "2", 10*time.Second-holdSlack/2),
		}, ""},
		{"blocked joined", nil, []op{now(op{User: "blk1", Door: "blocked", Kind: "join", Status: 200, Pos: 3})}, "on the block list and joined"},
		{"blocked polled", nil, []op{now(op{User: "blk1", Door: "blocked", Kind: "status", Status: 200, State: "waiting"})}, "every step refuses 403 blocked"},
		{"blocked refused as not eligible", nil, []op{now(op{User: "blk1", Door: "blocked", Kind: "status", Status: 403, Code: "not_eligible"})}, "want 403 blocked"},
		{"blocked admitted", nil, []op{now(op{User: "blk1", Door: "blocked", Kind: "status", Status: 200, State: "admitted", Token: true})}, "on the block list and was admitted"},
		{"bot admitted", nil, []op{now(op{User: "bot1", Door: "bot", Kind: "status", Status: 200, State: "admitted", Token: true})}, "sunk bot bot1 was admitted"},
		{"bot's token at the join", nil, []op{now(op{User: "bot1", Door: "bot", Kind: "join", Status: 200, State: "admitted", Token: true})}, "sunk bot bot1 was admitted"},
		{"bot claimed", nil, []op{now(op{User: "bot1", Door: "bot", Kind: "claim", Status: 201, ClaimID: "c1", Key: "k0"})}, "sunk bot bot1 was granted"},
		{"off the list joined", nil, []op{now(op{User: "x1", Door: "offlist", Kind: "join", Status: 200, Pos: 4, Note: falsePositiveNote})}, "the list is exact"},
		{"off the list refused as blocked", nil, []op{now(op{User: "x1", Door: "offlist", Kind: "join", Status: 403, Code: "blocked"})}, "want 403 not_eligible"},
		{"member refused", nil, []op{now(op{User: "m1", Door: "member", Kind: "join", Status: 403, Code: "not_eligible"})}, "is on the eligibility list"},
		{"blocked mid-sale admitted", []doorChange{block}, []op{now(op{User: "u7", Cohort: "c1", Kind: "status", Status: 200, State: "admitted", Token: true})}, "after staff added them to the block list"},
		{"blocked mid-sale waits on", []doorChange{block}, []op{now(op{User: "u7", Cohort: "c1", Kind: "status", Status: 200, State: "waiting"})}, "at their next request"},
		{"blocked mid-sale claimed", []doorChange{block}, []op{now(op{User: "u7", Cohort: "c1", Kind: "claim", Status: 201, ClaimID: "c1", Key: "k0"})}, "claim c1 was granted to u7"},
		{"sunk mid-sale admitted", []doorChange{sink}, []op{now(op{User: "u8", Cohort: "c3", Kind: "status", Status: 200, State: "admitted", Token: true})}, "sank cohort c3"},
		{"sunk mid-sale replayed", []doorChange{sink}, []op{now(op{User: "u8", Cohort: "c3", Kind: "replay", Status: 200, ClaimID: "c1", Key: "k0"})}, "sank cohort c3"},
		{"sunk mid-sale on the node that saved it at once", []doorChange{sink},
			[]op{at(op{User: "u8", Cohort: "c3", Kind: "claim", Status: 201, ClaimID: "c1", Key: "k0"}, "1", 10*time.Second-holdSlack/2)}, "sank cohort c3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory()
			h.open("s", 150, 2, 12)
			h.openDoor("s", t0.Add(-time.Minute), t0.Add(-time.Minute))
			for _, c := range tc.changes {
				if c.cohort != "" {
					h.sinkSent("s", c.cohort, c.at.Add(-time.Second))
				}
				h.changedDoor("s", c)
			}
			for _, o := range tc.ops {
				h.record(o)
			}
			select {
			case v := <-h.found:
				if tc.want == "" || !strings.Contains(v.What, tc.want) {
					t.Fatalf("violation %q, want %q\n%s", v.What, tc.want, v.render(1))
				}
			default:
				if tc.want != "" {
					t.Fatalf("no violation, want %q", tc.want)
				}
			}
		})
	}
	// The tally counts the door's refusals.
	h := newHistory()
	h.open("s", 150, 2, 12)
	h.openDoor("s", t0.Add(-time.Minute), time.Time{})
	h.record(now(op{User: "blk1", Door: "blocked", Kind: "join", Status: http.StatusForbidden, Code: "blocked"}))
	h.record(now(op{User: "x1", Door: "offlist", Kind: "join", Status: http.StatusForbidden, Code: "not_eligible", Note: falsePositiveNote}))
	h.record(now(op{User: "bot1", Door: "bot", Kind: "join", Status: 200, Pos: 9}))
	if got, want := h.doorTally(), "403 blocked 1 (join 1, status 0, claim 0), 403 not_eligible 1 (1 of them a filter's false positive), 1 bots' joins sunk"; !strings.Contains(got, want) {
		t.Errorf("tally %q, want %q", got, want)
	}
}

// TestOffListIsTheNodesFilter: the ids offList finds are ones a node's
// view of the list (lists.Set, on real Redis) answers Maybe for, though
// they are not on it: the soak's false positives are the nodes'.
func TestOffListIsTheNodesFilter(t *testing.T) {
	ctx := context.Background()
	store := lists.NewStore(testenv.StartRedis(t).Client(t))
	if err := store.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, "members", lists.KindUser); err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	for i := range memberPool {
		fmt.Fprintf(&csv, "m%d\n", i+1)
	}
	if _, err := store.Load(ctx, "members", strings.NewReader(csv.String()), lists.LoadOptions{Replace: true, Format: lists.CSV}); err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := store.Export(ctx, "members", &export); err != nil {
		t.Fatal(err)
	}
	ids, n, err := offList(export.Bytes(), store.Hash, "x")
	if err != nil || n != memberPool || len(ids) != falsePositives {
		t.Fatalf("offList: %v, %d entries, %d ids, want %d and %d", err, n, len(ids), memberPool, falsePositives)
	}
	view := lists.NewSet(store)
	if err := view.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := view.User("members", "m7"); got != door.Maybe {
		t.Fatalf("a member: %v, want Maybe", got)
	}
	for _, id := range ids {
		if got := view.User("members", id); got != door.Maybe {
			t.Errorf("%s: the node's filter answers %v, want Maybe (a false positive)", id, got)
		}
	}
}

// TestBlockTargets: staff's block during a sale picks two people admitted
// who have not claimed and one who waits, never twice the same, among the
// JSON shoppers; with nobody admitted, only the waiting one.
func TestBlockTargets(t *testing.T) {
	h := newHistory()
	h.open("s", 150, 2, 12)
	for i, u := range []string{"a", "b", "c", "d", "e"} {
		h.record(op{Sale: "s", User: u, Cohort: "c1", Kind: "join", Status: 200, Pos: int64(i + 1)})
	}
	h.record(op{Sale: "s", User: "f", Kind: "join", Status: 200, Pos: 6}) // the basic page: no cohort
	got, admitted, waiting := h.blockTargets("s", rand.New(rand.NewPCG(1, 2)))
	if len(got) != 1 || admitted != 0 || waiting != 5 {
		t.Fatalf("nobody admitted: %v (%d admitted, %d waiting), want one of 5 waiting", got, admitted, waiting)
	}
	for _, u := range []string{"a", "b", "c"} {
		h.record(op{Sale: "s", User: u, Cohort: "c1", Kind: "status", Status: 200, State: "admitted", Token: true})
	}
	h.record(op{Sale: "s", User: "c", Cohort: "c1", Kind: "claim", Key: "k0", Status: 201, ClaimID: "x"})
	got, admitted, waiting = h.blockTargets("s", rand.New(rand.NewPCG(3, 4)))
	if len(got) != 3 || admitted != 2 || waiting != 2 || got[0] == got[1] || !strings.Contains("ab", got[0]) || !strings.Contains("ab", got[1]) || !strings.Contains("de", got[2]) {
		t.Fatalf("targets %v (%d admitted, %d waiting), want a and b, then d or e", got, admitted, waiting)
	}
}
