package node_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/golang-jwt/jwt/v5"
)

// identityMode is one caller identity mode as the claim tests use it.
type identityMode struct {
	name string
	cfg  func(t *testing.T, base node.Config) node.Config
	// enter joins ev as user and returns the headers that name user from
	// then on, and the queue ticket.
	enter func(t *testing.T, n *node.Node, ev, user string) (who map[string]string, ticket string)
	// invalid names nobody: a malformed or forged identity.
	invalid map[string]string
}

func identityModes(t *testing.T) []identityMode {
	s := newShop(t)
	joinWith := func(t *testing.T, n *node.Node, ev string, hdr map[string]string) nodetest.Answer {
		t.Helper()
		j := nodetest.Call(t, http.MethodPost, n.URL()+"/events/"+ev+"/join", hdr, nil)
		if j.Status != http.StatusOK {
			t.Fatalf("join: %d %s", j.Status, j.Raw)
		}
		return j
	}
	return []identityMode{{
		name: "header",
		cfg:  func(_ *testing.T, c node.Config) node.Config { return nodetest.HeaderMode(c) },
		enter: func(t *testing.T, n *node.Node, ev, user string) (map[string]string, string) {
			who := map[string]string{"X-User-ID": user}
			return who, nodetest.Str(joinWith(t, n, ev, who).Body, "ticket")
		},
		invalid: map[string]string{"X-User-ID": "has space"},
	}, {
		name: "anonymous",
		cfg: func(_ *testing.T, c node.Config) node.Config {
			c.Identity = "anonymous"
			return c
		},
		enter: func(t *testing.T, n *node.Node, ev, _ string) (map[string]string, string) {
			j := joinWith(t, n, ev, nil)
			v, _ := cookieOf(j, "anteroom_visitor")
			if v == "" {
				t.Fatalf("join set no visitor cookie: %v", j.Header.Values("Set-Cookie"))
			}
			return map[string]string{"Cookie": "anteroom_visitor=" + v}, nodetest.Str(j.Body, "ticket")
		},
		invalid: map[string]string{"Cookie": "anteroom_visitor=garbage"},
	}, {
		name: "jwt",
		cfg: func(_ *testing.T, c node.Config) node.Config {
			c.Identity, c.UserJWKS, c.UserIssuer, c.UserAudience = "jwt", s.file, "https://shop.example", "anteroom"
			return c
		},
		enter: func(t *testing.T, n *node.Node, ev, user string) (map[string]string, string) {
			who := map[string]string{"X-User-Token": sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims(user, nil))}
			return who, nodetest.Str(joinWith(t, n, ev, who).Body, "ticket")
		},
		invalid: map[string]string{"X-User-Token": "garbage"},
	}}
}

// with returns hdr plus the pairs kv.
func with(hdr map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range hdr {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestClaimBoundToCaller: in every identity mode an admission token is
// spent only by the caller it names. Without an identity (none, or an
// invalid one) the claim is 401, with another user's 403, and neither
// claims anything; another user can neither see nor release the claim.
func TestClaimBoundToCaller(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	for _, m := range identityModes(t) {
		t.Run(m.name, func(t *testing.T) {
			n := nodetest.Start(t, m.cfg(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
			ev := "bound-" + m.name
			nodetest.CreateSale(t, n, ev, openSale(10, 1, 0, 0, 1000))
			base := n.URL() + "/events/" + ev
			alice, ticket := m.enter(t, n, ev, "alice")
			bob, _ := m.enter(t, n, ev, "bob")
			bearer := "Bearer " + pollAdmission(t, n, ev, ticket)

			problemOK(t, nodetest.Call(t, http.MethodPost, base+"/claim", map[string]string{"Authorization": bearer}, nil), http.StatusUnauthorized, "unauthenticated")
			problemOK(t, nodetest.Call(t, http.MethodPost, base+"/claim", with(m.invalid, "Authorization", bearer), nil), http.StatusUnauthorized, "unauthenticated")
			problemOK(t, nodetest.Call(t, http.MethodPost, base+"/claim", with(bob, "Authorization", bearer), nil), http.StatusForbidden, "forbidden")
			if tot, err := n.Claims.Totals(context.Background(), claim.Sale{ID: ev, Buckets: 1}); err != nil || tot.Granted != 0 {
				t.Fatalf("granted %d (%v) after refused claims, want 0", tot.Granted, err)
			}

			c := nodetest.Call(t, http.MethodPost, base+"/claim", with(alice, "Authorization", bearer), nil)
			if c.Status != http.StatusCreated {
				t.Fatalf("alice's claim: %d %s", c.Status, c.Raw)
			}
			id := nodetest.Str(c.Body, "claim_id")
			if a := nodetest.Call(t, http.MethodGet, base+"/claims/"+id, alice, nil); a.Status != http.StatusOK {
				t.Errorf("alice's lookup: %d %s", a.Status, a.Raw)
			}
			problemOK(t, nodetest.Call(t, http.MethodGet, base+"/claims/"+id, bob, nil), http.StatusNotFound, "not_found")
			problemOK(t, nodetest.Call(t, http.MethodGet, base+"/claims/"+id, nil, nil), http.StatusUnauthorized, "unauthenticated")
			if a := nodetest.Call(t, http.MethodGet, base+"/claims", bob, nil); a.Status != http.StatusOK || !emptyList(a.Body["claims"]) {
				t.Errorf("bob's list: %d %s, want no claims", a.Status, a.Raw)
			}
			problemOK(t, nodetest.Call(t, http.MethodPost, base+"/claims/"+id+"/release", bob, nil), http.StatusNotFound, "not_found")
			problemOK(t, nodetest.Call(t, http.MethodPost, base+"/claims/"+id+"/release", m.invalid, nil), http.StatusUnauthorized, "unauthenticated")
			if a := nodetest.Call(t, http.MethodGet, base+"/claims/"+id, alice, nil); nodetest.Str(a.Body, "status") != "pending" {
				t.Errorf("alice's claim after bob's release: %d %s, want pending", a.Status, a.Raw)
			}
		})
	}
}

// emptyList reports whether v is a decoded JSON array with no elements.
func emptyList(v any) bool {
	l, ok := v.([]any)
	return ok && len(l) == 0
}
