package tokens

import (
	"errors"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// TestUserVerifierLifetime: a user token living longer than MaxAge (exp
// minus iat, or exp minus now without iat) is refused, 24 hours by
// default; within the cap it passes.
func TestUserVerifierLifetime(t *testing.T) {
	shop := newShopKeys(t)
	path := writeJWKS(t, jose.JSONWebKey{Key: &shop.ec.PublicKey, KeyID: "ec-1", Algorithm: "ES256", Use: "sig"})
	now := t0()
	tok := func(c jwt.MapClaims) string {
		c["sub"], c["iss"], c["aud"] = "alice", "https://id.shop", "anteroom"
		return craft(t, jwt.SigningMethodES256, shop.ec, map[string]any{"kid": "ec-1"}, c)
	}
	cases := []struct {
		name   string
		maxAge time.Duration
		claims jwt.MapClaims
		ok     bool
	}{
		{"one hour, default cap", 0, jwt.MapClaims{"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}, true},
		{"a year, default cap", 0, jwt.MapClaims{"iat": now.Unix(), "exp": now.Add(365 * 24 * time.Hour).Unix()}, false},
		{"25 hours, default cap", 0, jwt.MapClaims{"iat": now.Add(-time.Hour).Unix(), "exp": now.Add(24 * time.Hour).Unix()}, false},
		{"no iat, far exp", 0, jwt.MapClaims{"exp": now.Add(48 * time.Hour).Unix()}, false},
		{"no iat, near exp", 0, jwt.MapClaims{"exp": now.Add(time.Hour).Unix()}, true},
		{"two hours, cap one hour", time.Hour, jwt.MapClaims{"iat": now.Unix(), "exp": now.Add(2 * time.Hour).Unix()}, false},
		{"two hours, cap three hours", 3 * time.Hour, jwt.MapClaims{"iat": now.Unix(), "exp": now.Add(2 * time.Hour).Unix()}, true},
		{"no exp", 0, jwt.MapClaims{"iat": now.Unix()}, false},
	}
	for _, tc := range cases {
		u, err := NewUserVerifier(UserVerifierConfig{JWKSFile: path, Issuer: "https://id.shop", Audience: "anteroom", MaxAge: tc.maxAge})
		if err != nil {
			t.Fatal(err)
		}
		_, err = u.Verify(tok(tc.claims), now)
		if tc.ok && err != nil {
			t.Errorf("%s: %v, want accepted", tc.name, err)
		}
		if !tc.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
		}
	}
}
