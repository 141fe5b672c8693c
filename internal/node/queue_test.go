package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// TestStatusIsFree makes 1,000 status calls — waiting and admitted — and
// checks with INFO commandstats that they cost Redis nothing.
func TestStatusIsFree(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Manual: true}))
	nodetest.CreateSale(t, n, "free", openSale(100, 1, 0, 0, 5))
	var tickets []string
	for i := range 20 {
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/free/join", map[string]string{"X-User-ID": fmt.Sprint("u", i)}, nil)
		tickets = append(tickets, nodetest.Str(j.Body, "ticket"))
	}
	time.Sleep(1100 * time.Millisecond) // let about 5 positions be admitted at 5/s
	if err := n.Snapshots.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := r.CommandCount(t)
	states := map[string]int{}
	for i := range 1000 {
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/events/free/status", map[string]string{"Authorization": "Bearer " + tickets[i%len(tickets)]}, nil)
		if a.Status != http.StatusOK {
			t.Fatalf("status: %d %s", a.Status, a.Raw)
		}
		states[nodetest.Str(a.Body, "state")]++
	}
	if after := r.CommandCount(t); after != before {
		t.Fatalf("1,000 status calls ran %d Redis commands, want 0", after-before)
	}
	if states["admitted"] == 0 || states["waiting"] == 0 {
		t.Errorf("states %v: want both admitted and waiting answers", states)
	}
}

// TestShuffleWindowAndVerify joins a window of shoppers, lets it close, and
// checks that the positions the API serves are a permutation of 1..W equal
// to what anyone computes from the revealed seed, W and seq.
func TestShuffleWindowAndVerify(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	sale := openSale(10, 1, time.Second, 1, 1)
	nodetest.CreateSale(t, n, "shuffle", sale)
	pub := nodetest.Call(t, http.MethodGet, n.URL()+"/events/shuffle", nil, nil)
	if nodetest.Str(pub.Body, "seed") != "" || len(nodetest.Str(pub.Body, "seed_commitment")) != 64 {
		t.Fatalf("before the window closes: %s", pub.Raw)
	}
	const members = 40
	tickets := map[int64]string{}
	for i := range members {
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/shuffle/join", map[string]string{"X-User-ID": fmt.Sprint("w", i)}, nil)
		if j.Status != http.StatusOK || nodetest.Str(j.Body, "state") != "prequeue" || j.Body["position"] != nil {
			t.Fatalf("join in window: %d %s", j.Status, j.Raw)
		}
		again := nodetest.Call(t, http.MethodPost, n.URL()+"/events/shuffle/join", map[string]string{"X-User-ID": fmt.Sprint("w", i)}, nil)
		if nodetest.Str(again.Body, "ticket") != nodetest.Str(j.Body, "ticket") {
			t.Fatalf("repeated join gave another ticket")
		}
		tickets[int64(j.Body["seq"].(float64))] = nodetest.Str(j.Body, "ticket")
	}
	nodetest.WaitFor(t, "the window to close", 10*time.Second, func() bool {
		pub = nodetest.Call(t, http.MethodGet, n.URL()+"/events/shuffle", nil, nil)
		return nodetest.Str(pub.Body, "seed") != ""
	})
	seed, err := queue.ParseSeedHex(nodetest.Str(pub.Body, "seed"))
	if err != nil || queue.Commitment(seed) != nodetest.Str(pub.Body, "seed_commitment") {
		t.Fatalf("revealed seed does not match its commitment: %v", err)
	}
	w := int64(pub.Body["window_size"].(float64))
	if w != members {
		t.Fatalf("window size %d, want %d", w, members)
	}
	perm, err := queue.NewPermutation(seed, w)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	moved := 0
	for seq, ticket := range tickets {
		s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/shuffle/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
		pos := int64(s.Body["position"].(float64))
		if want := queue.Position(perm, seq); pos != want {
			t.Errorf("seq %d: API position %d, verify computes %d", seq, pos, want)
		}
		if pos < 1 || pos > w || seen[pos] {
			t.Errorf("seq %d: position %d repeated or outside 1..%d", seq, pos, w)
		}
		seen[pos] = true
		if pos != seq {
			moved++
		}
	}
	if moved < members/2 {
		t.Errorf("only %d of %d window members moved: the window is not shuffled", moved, members)
	}
	late := nodetest.Call(t, http.MethodPost, n.URL()+"/events/shuffle/join", map[string]string{"X-User-ID": "late"}, nil)
	if seq := late.Body["seq"].(float64); late.Body["position"] != seq {
		t.Errorf("late joiner: position %v, want its seq %v", late.Body["position"], seq)
	}
}

// TestLottery registers shoppers until the start, draws, and shows that the
// first positions of the draw win and everyone else sees not_selected; late
// registration is refused.
func TestLottery(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	const entrants = 12
	tickets := registerLottery(t, n, "draw", 3, entrants, "l")
	// Admitted people claim at once; the rest wait for the outcome.
	final := map[string]string{}
	positions := map[string]int64{}
	nodetest.WaitFor(t, "every entrant to learn the outcome", 20*time.Second, func() bool {
		for u, ticket := range tickets {
			if final[u] != "" {
				continue
			}
			s := nodetest.Call(t, http.MethodGet, n.URL()+"/events/draw/status", map[string]string{"Authorization": "Bearer " + ticket}, nil)
			if p, ok := s.Body["position"].(float64); ok {
				positions[u] = int64(p)
			}
			switch st := nodetest.Str(s.Body, "state"); st {
			case "admitted":
				c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/draw/claim", map[string]string{"X-User-ID": u, "Authorization": "Bearer " + nodetest.Str(s.Body, "admission_token")}, nil)
				if c.Status == http.StatusCreated {
					final[u] = "won"
				}
			case "not_selected", "sold_out":
				final[u] = st
			}
		}
		return len(final) == entrants
	})
	won := 0
	for u, f := range final {
		switch {
		case f == "won":
			won++
			if positions[u] > 3 {
				t.Errorf("%s won from position %d, want a position in the first 3", u, positions[u])
			}
		case f != "not_selected":
			t.Errorf("%s: %s, want not_selected", u, f)
		}
	}
	if won != 3 {
		t.Errorf("%d winners, want 3", won)
	}
	late := nodetest.Call(t, http.MethodPost, n.URL()+"/events/draw/join", map[string]string{"X-User-ID": "late"}, nil)
	if late.Status != http.StatusForbidden {
		t.Errorf("registration after the start: %d %s, want 403", late.Status, late.Raw)
	}
}

// TestModeLocksWhenWindowCloses toggles FCFS ⇄ lottery and the window
// before the window's lock (event.LockMargin before the start), and gets
// 409 once the window closed.
func TestModeLocksWhenWindowCloses(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "toggle", openSale(3, 1, event.LockMargin+3*time.Second, 1, 100))
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	put := func(body map[string]any) nodetest.Answer {
		raw, _ := json.Marshal(body)
		return nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/toggle", admin, raw)
	}
	if a := put(map[string]any{"mode": "lottery"}); a.Status != http.StatusOK {
		t.Fatalf("toggle before the window closes: %d %s", a.Status, a.Raw)
	}
	if a := put(map[string]any{"mode": "fcfs", "random_window_seconds": 1}); a.Status != http.StatusOK {
		t.Fatalf("toggle back: %d %s", a.Status, a.Raw)
	}
	nodetest.WaitFor(t, "the window to close", event.LockMargin+15*time.Second, func() bool {
		return nodetest.Str(nodetest.Call(t, http.MethodGet, n.URL()+"/events/toggle", nil, nil).Body, "seed") != ""
	})
	a := put(map[string]any{"mode": "lottery"})
	if a.Status != http.StatusConflict || nodetest.Str(a.Body, "code") != "locked" {
		t.Fatalf("toggle after the window closed: %d %s, want 409 locked", a.Status, a.Raw)
	}
	if a := put(map[string]any{"admit_rate_per_second": 7}); a.Status != http.StatusOK {
		t.Errorf("rate change after the window closed: %d %s, want 200", a.Status, a.Raw)
	}
}
