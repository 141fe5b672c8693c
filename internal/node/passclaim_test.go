package node_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
)

// TestPassHolderClaimsReadable: pass holders (position 2^50) claim on a
// node, on redis-server and on the embedded default; their claim, their
// list of claims, the release reply and a rebuild all answer, with the
// position exactly 2^50.
func TestPassHolderClaimsReadable(t *testing.T) {
	for _, embedded := range []bool{false, true} {
		name := map[bool]string{false: "redis-server", true: "embedded"}[embedded]
		t.Run(name, func(t *testing.T) {
			cfg := node.Config{}
			if !embedded {
				cfg.RedisURL = testenv.StartRedis(t).URL()
				cfg.NATSURL = testenv.StartNATS(t).URL()
			}
			n := nodetest.Start(t, nodetest.HeaderMode(cfg))
			nodetest.CreateSale(t, n, "vip", openSale(5, 1, 30*time.Minute, 0, 1))
			op := map[string]string{"Authorization": "Bearer " + staffKey(t, n, "olga", "operator")}
			a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/vip/passes", op, []byte(`{"uses":2,"ttl_seconds":600}`))
			if a.Status != http.StatusCreated {
				t.Fatalf("mint: %d %s", a.Status, a.Raw)
			}
			pass := nodetest.Str(a.Body, "pass")
			claims := map[string]string{}
			for _, user := range []string{"alice", "bob"} {
				got := join(t, n, "vip", map[string]string{"X-User-ID": user, tokens.PassHeader: pass})
				if got.Status != 200 || nodetest.Str(got.Body, "state") != "admitted" {
					t.Fatalf("%s redeems: %d %s", user, got.Status, got.Raw)
				}
				c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/vip/claim", map[string]string{"X-User-ID": user,
					"Authorization": "Bearer " + nodetest.Str(got.Body, "admission_token"), "Idempotency-Key": "k"}, nil)
				if c.Status != http.StatusCreated {
					t.Fatalf("%s claims: %d %s", user, c.Status, c.Raw)
				}
				claims[user] = nodetest.Str(c.Body, "claim_id")
			}
			atPass := func(what string, a nodetest.Answer, body map[string]any) {
				t.Helper()
				if a.Status != 200 {
					t.Errorf("%s: %d %s, want 200", what, a.Status, a.Raw)
					return
				}
				if p, _ := body["position"].(float64); int64(p) != admission.PassPosition {
					t.Errorf("%s: %s, want position %d", what, a.Raw, admission.PassPosition)
				}
			}
			lookup := func(what, user string) {
				t.Helper()
				a := nodetest.Call(t, http.MethodGet, n.URL()+"/events/vip/claims/"+claims[user], map[string]string{"X-User-ID": user}, nil)
				atPass(what, a, a.Body)
			}
			lookup("lookup", "alice")
			mine := nodetest.Call(t, http.MethodGet, n.URL()+"/events/vip/claims", map[string]string{"X-User-ID": "alice"}, nil)
			if list, _ := mine.Body["claims"].([]any); len(list) == 1 {
				one, _ := list[0].(map[string]any)
				atPass("my claims", mine, one)
			} else {
				t.Errorf("my claims: %d %s, want one claim", mine.Status, mine.Raw)
			}
			rel := nodetest.Call(t, http.MethodPost, n.URL()+"/events/vip/claims/"+claims["bob"]+"/release", map[string]string{"X-User-ID": "bob"}, nil)
			atPass("release", rel, rel.Body)
			admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
			if rb := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/vip/rebuild", admin, nil); rb.Status != 200 {
				t.Errorf("rebuild: %d %s, want 200", rb.Status, rb.Raw)
			}
			lookup("lookup after the rebuild", "alice")
			lookup("released claim after the rebuild", "bob")
		})
	}
}
