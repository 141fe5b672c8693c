package node_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
	"github.com/golang-jwt/jwt/v5"
)

// earlyLaneSale is a sale starting in 30 minutes with one lane that
// started a second ago.
func earlyLaneSale(lane map[string]any) map[string]any {
	s := openSale(10, 1, 30*time.Minute, 0, 10)
	lane["starts_at"] = time.Now().UTC().Truncate(time.Second).Add(-time.Second)
	s["lanes"] = []any{lane}
	return s
}

// TestLaneByInvite: an invite signed for the lane puts its holder in the
// lane, which starts before the sale: they are admitted (position 1 of the
// lane) while a plain joiner waits for the sale. A forged invite, one for
// a lane the sale lacks, and one for another user are refused 403
// invite_invalid and change nothing.
func TestLaneByInvite(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: secret}))
	nodetest.CreateSale(t, n, "lanes", earlyLaneSale(map[string]any{"name": "members", "share": 0.5}))
	inv, _ := tokens.NewInvites(secret)
	exp := time.Now().Add(time.Hour)
	member := inv.SignLane("lanes", "alice", "members", exp)
	rdb := r.Client(t)
	laneSeq := func() int64 {
		v, _ := rdb.Get(context.Background(), queue.KeysForLane("lanes", 1).Seq).Int64()
		return v
	}

	for name, bad := range map[string]string{
		"forged":       member[:len(member)-2] + "AA",
		"moved lane":   strings.Replace(member, ".members.", ".partner.", 1),
		"no such lane": inv.SignLane("lanes", "alice", "partner", exp),
		"another user": inv.SignLane("lanes", "bob", "members", exp),
	} {
		problemOK(t, join(t, n, "lanes", map[string]string{"X-User-ID": "alice", "X-Invite-Token": bad}), http.StatusForbidden, "invite_invalid")
		if got := laneSeq(); got != 0 {
			t.Fatalf("%s invite: the lane's queue has %d people, want 0", name, got)
		}
	}

	a := join(t, n, "lanes", map[string]string{"X-User-ID": "alice", "X-Invite-Token": member})
	if a.Status != 200 || nodetest.Str(a.Body, "lane") != "members" {
		t.Fatalf("lane join: %d %s", a.Status, a.Raw)
	}
	b := join(t, n, "lanes", map[string]string{"X-User-ID": "bob"})
	if b.Status != 200 || b.Body["lane"] != nil || nodetest.Str(b.Body, "state") != "prequeue" {
		t.Fatalf("plain join: %d %s", b.Status, b.Raw)
	}
	tok := pollAdmission(t, n, "lanes", nodetest.Str(a.Body, "ticket"))
	if pos := payloadOf(t, tok)["pos"].(float64); int64(pos) != queue.Laned(1, 1) {
		t.Errorf("lane admission pos %v, want lane 1 position 1 (%d)", pos, queue.Laned(1, 1))
	}
	st := nodetest.Call(t, http.MethodGet, n.URL()+"/events/lanes/status", map[string]string{"Authorization": "Bearer " + nodetest.Str(a.Body, "ticket")}, nil)
	if st.Body["position"] != 1.0 || nodetest.Str(st.Body, "state") != "admitted" {
		t.Errorf("lane status: %s, want admitted at position 1 of the lane", st.Raw)
	}
	st = nodetest.Call(t, http.MethodGet, n.URL()+"/events/lanes/status", map[string]string{"Authorization": "Bearer " + nodetest.Str(b.Body, "ticket")}, nil)
	if nodetest.Str(st.Body, "state") != "prequeue" {
		t.Errorf("the default lane before the sale: %s, want prequeue", st.Raw)
	}
	v := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/lanes", map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	live, _ := v.Body["live"].(map[string]any)
	if lanes, _ := live["lanes"].([]any); len(lanes) != 1 || lanes[0].(map[string]any)["joined"] != 1.0 || lanes[0].(map[string]any)["admit_rate_per_second"] != 5.0 {
		t.Errorf("admin view of the lanes: %s", v.Raw)
	}
	c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/lanes/claim", map[string]string{"X-User-ID": "alice", "Authorization": "Bearer " + tok, "Idempotency-Key": "k1"}, nil)
	if c.Status != http.StatusCreated {
		t.Fatalf("claim with a lane admission: %d %s", c.Status, c.Raw)
	}
}

// TestLaneByUserTokenClaim: in jwt mode a verified user token carrying
// the lane's claim (a string or an array holding the value) joins the
// lane; another value, or none, joins the default lane.
func TestLaneByUserTokenClaim(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	s := newShop(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "jwt", UserJWKS: s.file,
		UserIssuer: "https://shop.example", UserAudience: "anteroom"})
	nodetest.CreateSale(t, n, "vip", earlyLaneSale(map[string]any{"name": "gold", "share": 0.3, "claim": map[string]string{"name": "tier", "value": "gold"}}))
	for _, tc := range []struct {
		user string
		tier any
		lane string
	}{
		{"ann", "gold", "gold"},
		{"ben", []string{"silver", "gold"}, "gold"},
		{"cat", "silver", ""},
		{"dan", nil, ""},
	} {
		claims := jwt.MapClaims{}
		if tc.tier != nil {
			claims["tier"] = tc.tier
		}
		tok := sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims(tc.user, claims))
		a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/vip/join", map[string]string{"X-User-Token": tok}, nil)
		if a.Status != 200 || nodetest.Str(a.Body, "lane") != tc.lane {
			t.Fatalf("%s (tier %v) joins: %d %s, want lane %q", tc.user, tc.tier, a.Status, a.Raw, tc.lane)
		}
		if tc.user == "ann" {
			pollAdmission(t, n, "vip", nodetest.Str(a.Body, "ticket"))
		}
	}
}
