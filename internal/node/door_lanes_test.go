package node_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
)

// TestDoorLaneJoin: the join of a lane member reads the lists' exact
// copies where the store lays them (a sale with lanes keeps a whole copy
// in the event's slot, package door/lists), on the node's real lists. A
// member of the sale's eligibility list joins the early lane by invite;
// a person on its block list is refused 403 blocked there, and nothing
// is written to the lane's queue. The soak found it (issue 35, item 7):
// the join read the copy under the lane's own key prefix, which no copy
// has, so every lane member was refused not_eligible and a blocked
// person with an invite joined the lane.
func TestDoorLaneJoin(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret}))
	ctx := context.Background()
	for list, users := range map[string][]string{"members": {"alice", "mallory"}, "resellers": {"mallory"}} {
		if _, err := n.Lists.Create(ctx, list, "user"); err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			if _, err := n.Lists.Add(ctx, list, u); err != nil {
				t.Fatal(err)
			}
		}
	}
	sale := earlyLaneSale(map[string]any{"name": "members", "share": 0.5})
	sale["door"] = map[string]any{"block_lists": []string{"resellers"}, "eligible_lists": []string{"members"}}
	nodetest.CreateSale(t, n, "dl", sale) // the save lays the copies
	nodetest.WaitFor(t, "the view to hold the lists", 20*time.Second, func() bool {
		return n.ListView.User("members", "alice") == door.Maybe && n.ListView.User("resellers", "mallory") == door.Maybe
	})
	inv, _ := tokens.NewInvites(secret)
	invite := func(u string) map[string]string {
		return map[string]string{"X-User-ID": u, tokens.InviteHeader: inv.SignLane("dl", u, "members", time.Now().Add(time.Hour))}
	}
	a := join(t, n, "dl", invite("alice"))
	if a.Status != http.StatusOK || nodetest.Str(a.Body, "lane") != "members" {
		t.Fatalf("a member's lane join: %d %s, want 200 in lane members", a.Status, a.Raw)
	}
	m := join(t, n, "dl", invite("mallory"))
	if m.Status != http.StatusForbidden || nodetest.Str(m.Body, "code") != "blocked" {
		t.Fatalf("a blocked person's lane join: %d %s, want 403 blocked", m.Status, m.Raw)
	}
	if seq, _ := r.Client(t).Get(ctx, queue.KeysForLane("dl", 1).Seq).Int64(); seq != 1 {
		t.Fatalf("the lane's queue holds %d people, want 1 (alice)", seq)
	}
	// The default lane, for comparison: the same lists, decided the same.
	b := join(t, n, "dl", map[string]string{"X-User-ID": "alice"})
	if b.Status != http.StatusOK {
		t.Fatalf("a member's join: %d %s", b.Status, b.Raw)
	}
}

// TestDoorSinkLane: a sunk join with a lane invite answers as a real
// join with it does, naming the lane: an answer without it would tell
// the sink apart (issue 35: no state, field, header or timing that tells
// it from a real wait). The soak found it: 'm86 joined with an invite
// for lane "early" and was put in lane ""', its cohort sunk by a rule.
func TestDoorSinkLane(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret}))
	sale := earlyLaneSale(map[string]any{"name": "members", "share": 0.5})
	sale["door"] = map[string]any{"rules": []map[string]string{rule("bots", "sink")}}
	nodetest.CreateSale(t, n, "sl", sale)
	inv, _ := tokens.NewInvites(secret)
	invite := func(u string) map[string]string {
		return map[string]string{"X-User-ID": u, tokens.InviteHeader: inv.SignLane("sl", u, "members", time.Now().Add(time.Hour))}
	}
	realJ := join(t, n, "sl", invite("alice"))
	sunkJ := join(t, n, "sl", with(invite("bob"), "X-Test-Door", "bots"))
	for _, a := range []nodetest.Answer{realJ, sunkJ} {
		if a.Status != http.StatusOK || nodetest.Str(a.Body, "lane") != "members" {
			t.Fatalf("a lane join: %d %s, want 200 naming lane members", a.Status, a.Raw)
		}
	}
	if !slices.Equal(keysOf(realJ.Body), keysOf(sunkJ.Body)) {
		t.Fatalf("join answers differ in shape:\nreal %s\nsunk %s", realJ.Raw, sunkJ.Raw)
	}
	if seq, _ := r.Client(t).Get(context.Background(), queue.KeysForLane("sl", 1).Seq).Int64(); seq != 1 {
		t.Fatalf("the lane's queue holds %d people, want 1 (alice)", seq)
	}
	// A forged invite is refused before the sink as before the queue.
	bad := invite("carol")
	bad[tokens.InviteHeader] += "x"
	problemOK(t, join(t, n, "sl", with(bad, "X-Test-Door", "bots")), http.StatusForbidden, "invite_invalid")
}
