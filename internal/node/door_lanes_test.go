package node_test

import (
	"context"
	"crypto/rand"
	"net/http"
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
