package e2e

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
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
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, nodetest.HeaderMode, func(c node.Config) node.Config { c.TicketSecret = secret; return c })
	browser := startBrowser(t)
	now := time.Now().UTC().Truncate(time.Second)
	body, _ := json.Marshal(map[string]any{"name": "Members first", "supply": 5, "prequeue_opens_at": now.Add(-2 * time.Second),
		"starts_at": now.Add(30 * time.Minute), "ends_at": now.Add(time.Hour), "admit_rate_per_second": 10,
		"lanes": []any{map[string]any{"name": "members", "share": 0.5, "starts_at": now.Add(-time.Second)}}})
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/early", map[string]string{"Authorization": "Bearer " + n.AdminToken}, body); a.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.Status, a.Raw)
	}
	inv, _ := tokens.NewInvites(secret)
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
