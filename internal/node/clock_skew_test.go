package node_test

import (
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
	"github.com/golang-jwt/jwt/v5"
)

// skewLeeway is the verification leeway of admission tokens
// (tokens.IssuerConfig's default), the documented few seconds.
const skewLeeway = 5 * time.Second

// TestSkewedClockTokens runs two nodes whose machine clocks are 30 s
// behind and 30 s ahead (ANTEROOM_CLOCK_SKEW, the drill setting). Neither
// accepts an admission token expired or not yet valid by more than the
// leeway, both accept a valid one, and the tokens the skewed node issues
// carry the real time: another node (and any gateway) accepts them.
func TestSkewedClockTokens(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	const iss, aud = "https://queue.shop.test", "shop-claim"
	start := func(skew time.Duration) *node.Node {
		return nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir,
			Issuer: iss, Audience: aud, ClockSkew: skew}))
	}
	behind, ahead := start(-30*time.Second), start(30*time.Second)
	nodetest.CreateSale(t, behind, "skew", openSale(100, 1, 0, 0, 1000))
	nodetest.WaitFor(t, "the other node to see the sale", 10*time.Second, func() bool { _, ok := ahead.Snapshots.Get("skew"); return ok })

	keys, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	kid := keys.Active()
	priv := signingKey(t, keyDir, kid)
	mint := func(user string, iat, nbf, exp time.Time) string {
		return sign(t, jwt.SigningMethodEdDSA, priv, kid, jwt.MapClaims{
			"iss": iss, "sub": user, "aud": []string{aud}, "event": "skew", "pos": 1, "jti": "j-" + user,
			"iat": iat.Unix(), "nbf": nbf.Unix(), "exp": exp.Unix(),
		})
	}
	claimOn := func(n *node.Node, user, tok string) nodetest.Answer {
		return nodetest.Call(t, http.MethodPost, n.URL()+"/events/skew/claim", map[string]string{"X-User-ID": user, "Authorization": "Bearer " + tok}, nil)
	}
	now := time.Now()
	beyond := skewLeeway + 5*time.Second
	for name, n := range map[string]*node.Node{"behind": behind, "ahead": ahead} {
		expired := mint(name+"-expired", now.Add(-time.Minute), now.Add(-time.Minute), now.Add(-beyond))
		if a := claimOn(n, name+"-expired", expired); a.Status != http.StatusUnauthorized {
			t.Errorf("node %s accepted a token expired %s ago: %d %s", name, beyond, a.Status, a.Raw)
		}
		// The gate (a proxy's per-request check) verifies by the clock alone.
		if a := nodetest.Call(t, http.MethodGet, n.URL()+"/events/skew/gate", map[string]string{"Authorization": "Bearer " + expired}, nil); a.Status != http.StatusUnauthorized {
			t.Errorf("node %s's gate let in a token expired %s ago: %d", name, beyond, a.Status)
		}
		early := mint(name+"-early", now, now.Add(beyond), now.Add(5*time.Minute))
		if a := claimOn(n, name+"-early", early); a.Status != http.StatusUnauthorized {
			t.Errorf("node %s accepted a token valid only %s from now: %d %s", name, beyond, a.Status, a.Raw)
		}
		valid := mint(name+"-valid", now, now, now.Add(5*time.Minute))
		if a := claimOn(n, name+"-valid", valid); a.Status != http.StatusCreated {
			t.Errorf("node %s refused a valid token: %d %s", name, a.Status, a.Raw)
		}
	}

	// A token each skewed node issues is stamped with the real time and
	// spent on the other one.
	for i, pair := range [][2]*node.Node{{ahead, behind}, {behind, ahead}} {
		user := fmt.Sprint("shopper", i)
		j := nodetest.Call(t, http.MethodPost, pair[0].URL()+"/events/skew/join", map[string]string{"X-User-ID": user}, nil)
		tok := pollAdmission(t, pair[0], "skew", nodetest.Str(j.Body, "ticket"))
		p := payloadOf(t, tok)
		for _, c := range []string{"iat", "nbf"} {
			v, _ := p[c].(float64)
			if off := time.Duration(math.Abs(float64(time.Now().Unix())-v)) * time.Second; off > skewLeeway {
				t.Errorf("token %d from a skewed node has %s %s off the real time: more than the leeway", i, c, off)
			}
		}
		if a := claimOn(pair[1], user, tok); a.Status != http.StatusCreated {
			t.Errorf("token %d issued by a skewed node refused by the other: %d %s", i, a.Status, a.Raw)
		}
	}
}

// TestSkewedClockAdmitsAtRate: a node whose clock is 30 s ahead admits no
// one before the sale starts and nobody above the rate after: every view it
// takes has F ≤ rate × (Redis time since the start).
func TestSkewedClockAdmitsAtRate(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), ClockSkew: 30 * time.Second}))
	const rate = 10.0
	sale := openSale(100, 1, 2*time.Second, 0, rate)
	nodetest.CreateSale(t, n, "pace", sale)
	startsAt := sale["starts_at"].(time.Time)
	for i := range 60 {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/pace/join", map[string]string{"X-User-ID": fmt.Sprint("p", i)}, nil); a.Status != http.StatusOK {
			t.Fatalf("join %d: %d %s", i, a.Status, a.Raw)
		}
	}
	views := 0
	nodetest.WaitFor(t, "20 admitted", 20*time.Second, func() bool {
		s, ok := n.Snapshots.Get("pace")
		if !ok {
			return false
		}
		views++
		most := max(rate*s.ServerTime.Sub(startsAt).Seconds(), 0)
		if s.Frontier > most+1e-3 {
			t.Fatalf("frontier %.3f at %s after the start: more than rate %.0f/s allows (%.3f)", s.Frontier, s.ServerTime.Sub(startsAt), rate, most)
		}
		return s.Frontier >= 20
	})
	t.Logf("%d views, none above the rate", views)
}
