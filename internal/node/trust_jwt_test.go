package node_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/golang-jwt/jwt/v5"
)

// TestJWTModeChecksPurpose: jwt mode does not start without the issuer
// and audience of the shop's tokens meant for anteroom, unless accepting
// any is asked for by name; and it refuses user tokens that live longer
// than the cap (24 hours by default, ANTEROOM_USER_MAX_TOKEN_AGE).
func TestJWTModeChecksPurpose(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	s := newShop(t)
	base := node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "jwt", UserJWKS: s.file}

	for name, cfg := range map[string]func(c *node.Config){
		"no issuer, no audience": func(c *node.Config) {},
		"no audience":            func(c *node.Config) { c.UserIssuer = "https://shop.example" },
		"no issuer":              func(c *node.Config) { c.UserAudience = "anteroom" },
	} {
		c := base
		cfg(&c)
		err := startErr(t, c)
		if err == nil || !strings.Contains(err.Error(), "ANTEROOM_USER_ISSUER") || !strings.Contains(err.Error(), "ANTEROOM_USER_AUDIENCE") {
			t.Errorf("%s: start gave %v, want a refusal naming ANTEROOM_USER_ISSUER and ANTEROOM_USER_AUDIENCE", name, err)
		}
	}
	anyCfg := base
	anyCfg.UserAcceptAnyIssuerAudience = true
	if err := startErr(t, anyCfg); err != nil {
		t.Errorf("with UserAcceptAnyIssuerAudience: %v", err)
	}

	cfg := base
	cfg.UserIssuer, cfg.UserAudience = "https://shop.example", "anteroom"
	n := nodetest.Start(t, cfg)
	nodetest.CreateSale(t, n, "life", openSale(10, 1, 0, 0, 1000))
	join := func(tok string) nodetest.Answer {
		return nodetest.Call(t, http.MethodPost, n.URL()+"/events/life/join", map[string]string{"X-User-Token": tok}, nil)
	}
	now := time.Now()
	hour := sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims("alice", nil))
	if a := join(hour); a.Status != http.StatusOK {
		t.Fatalf("a ten-minute token: %d %s", a.Status, a.Raw)
	}
	year := sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims("bob", jwt.MapClaims{"exp": now.Add(365 * 24 * time.Hour).Unix()}))
	problemOK(t, join(year), http.StatusUnauthorized, "unauthenticated")
	noIat := sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims("carol", jwt.MapClaims{"iat": nil, "exp": now.Add(30 * 24 * time.Hour).Unix()}))
	problemOK(t, join(noIat), http.StatusUnauthorized, "unauthenticated")
	noExp := sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims("dave", jwt.MapClaims{"exp": nil}))
	problemOK(t, join(noExp), http.StatusUnauthorized, "unauthenticated")

	// The cap is configurable.
	short := cfg
	short.UserMaxTokenAge = 5 * time.Minute
	n2 := nodetest.Start(t, short)
	nodetest.CreateSale(t, n2, "short", openSale(10, 1, 0, 0, 1000))
	a := nodetest.Call(t, http.MethodPost, n2.URL()+"/events/short/join", map[string]string{"X-User-Token": hour}, nil)
	problemOK(t, a, http.StatusUnauthorized, "unauthenticated")
}
