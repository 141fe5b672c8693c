package e2e

import (
	"crypto/rand"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/tokens"
	"github.com/chromedp/chromedp"
)

// TestRoomLaneInvite: a member opens the waiting room from an invite link
// for the sale's early lane and is admitted and claims half an hour before
// the sale starts; a shopper without the link is still before the sale.
func TestRoomLaneInvite(t *testing.T) {
	n, inv := inviteNode(t)
	browser := startBrowser(t)
	now := time.Now().UTC().Truncate(time.Second)
	nodetest.CreateSale(t, n, "early", map[string]any{"name": "Members first", "supply": 5, "prequeue_opens_at": now.Add(-2 * time.Second),
		"starts_at": now.Add(30 * time.Minute), "ends_at": now.Add(time.Hour), "admit_rate_per_second": 10,
		"lanes": []any{map[string]any{"name": "members", "share": 0.5, "starts_at": now.Add(-time.Second)}}})
	link := n.URL() + "/e/early?invite=" + inv.SignLane("early", "alice", "members", now.Add(time.Hour))

	member := newTab(t, browser, "room-member", phoneW, phoneH, map[string]any{"X-User-ID": "alice"})
	member.do(chromedp.Navigate(link))
	member.waitJS("the join button", joinEnabled, 10*time.Second)
	member.do(chromedp.Click(chromedp.ID("join")))
	member.waitJS("admission in the lane", claimVisible, 15*time.Second)
	if got := member.text("pos"); got != "1" {
		t.Errorf("position %q, want 1 (first in the lane)", got)
	}
	member.do(chromedp.Click(chromedp.ID("claim")))
	member.waitJS("the granted result", resultKind+` === "granted"`, 15*time.Second)
	member.shot("lane-granted")

	other := newTab(t, browser, "room-other", phoneW, phoneH, map[string]any{"X-User-ID": "bob"})
	other.do(chromedp.Navigate(n.URL() + "/e/early"))
	other.waitJS("the join button", joinEnabled, 10*time.Second)
	other.do(chromedp.Click(chromedp.ID("join")))
	other.waitJS("the queue card", `!document.getElementById("queue").hidden`, 10*time.Second)
	if eval[bool](other, claimVisible) {
		t.Error("a shopper without the invite was admitted before the sale")
	}
}

// TestRoomLaneFairness: once the seed is revealed, a lane member's
// fairness panel shows their lane's window size (with the lane's name),
// their number within the lane and a verify command with those, not the
// sale's window and the raw lane × 2^40 + n sequence number.
func TestRoomLaneFairness(t *testing.T) {
	n, inv := inviteNode(t)
	browser := startBrowser(t)
	// The member must open the room and join before the lane starts (its
	// window closes then): the lane's start is scheduled from that setup
	// measured on this machine, the sale's a second after it as before.
	pace := setupPace(t, n, browser, sale{supply: 5, opensIn: -2 * time.Second, startsIn: time.Hour, rate: 10}, map[string]any{"X-User-ID": "probe"})
	lane := nodetest.Lead(pace, 3*time.Second)
	now := time.Now().UTC().Truncate(time.Second)
	nodetest.CreateSale(t, n, "early", map[string]any{"name": "Members first", "supply": 5, "prequeue_opens_at": now.Add(-2 * time.Second),
		"starts_at": now.Add(lane + time.Second), "ends_at": now.Add(time.Hour), "admit_rate_per_second": 10,
		"limits": map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}},
		"lanes":  []any{map[string]any{"name": "members", "share": 0.5, "starts_at": now.Add(lane)}}})
	for _, u := range []string{"bob", "cat"} { // the sale's own window: 2
		if j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/early/join", map[string]string{"X-User-ID": u}, nil); j.Status != http.StatusOK {
			t.Fatalf("join %s: %d %s", u, j.Status, j.Raw)
		}
	}
	member := newTab(t, browser, "room-lane-fair", phoneW, phoneH, map[string]any{"X-User-ID": "alice"})
	member.do(chromedp.Navigate(n.URL() + "/e/early?invite=" + inv.SignLane("early", "alice", "members", now.Add(time.Hour))))
	member.waitJS("the join button", joinEnabled, 10*time.Second)
	member.do(chromedp.Click(chromedp.ID("join")))
	member.waitJS("the revealed seed", `!document.getElementById("reveal").hidden`, lane+time.Second)
	pub := nodetest.Call(t, http.MethodGet, n.URL()+"/events/early", nil, nil)
	lanes, _ := pub.Body["lanes"].([]any)
	if len(lanes) != 1 || lanes[0].(map[string]any)["window_size"] != 1.0 || pub.Body["window_size"] != 2.0 {
		t.Fatalf("want the member alone in the lane's window and two in the sale's: %s", pub.Raw)
	}
	if w, seq := member.text("w"), member.text("seq"); w != "1 (members)" || seq != "1" {
		t.Errorf("fairness panel: window %q, sequence %q; want the lane's window \"1 (members)\" and number 1", w, seq)
	}
	if cmd := member.text("cmd"); !strings.HasSuffix(cmd, "--lane-seed 1 --window 1 --seq 1") {
		t.Errorf("verify command %q, want the lane's own seed, window and number", cmd)
	}
	member.shot("lane-fairness")
}

// inviteNode starts a node in header mode with a ticket secret of its own
// and returns it with the invites that secret signs.
func inviteNode(t *testing.T) (*node.Node, *tokens.Invites) {
	t.Helper()
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, nodetest.HeaderMode, func(c node.Config) node.Config { c.TicketSecret = secret; return c })
	inv, err := tokens.NewInvites(secret)
	if err != nil {
		t.Fatal(err)
	}
	return n, inv
}
