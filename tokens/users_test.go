package tokens

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// shopKeys are the private keys of a pretend shop identity provider.
type shopKeys struct {
	rsa *rsa.PrivateKey
	ec  *ecdsa.PrivateKey
	ed  ed25519.PrivateKey
}

func newShopKeys(t testing.TB) shopKeys {
	t.Helper()
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, d, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return shopKeys{rsa: r, ec: e, ed: d}
}

// writeJWKS writes the public half of keys as a JWKS produced by go-jose.
func writeJWKS(t testing.TB, keys ...jose.JSONWebKey) string {
	t.Helper()
	data, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUserVerifierJWKS(t *testing.T) {
	shop, other := newShopKeys(t), newShopKeys(t)
	path := writeJWKS(t,
		jose.JSONWebKey{Key: &shop.rsa.PublicKey, KeyID: "rsa-1", Algorithm: "RS256", Use: "sig"},
		jose.JSONWebKey{Key: &shop.ec.PublicKey, KeyID: "ec-1"},
	)
	u, err := NewUserVerifier(UserVerifierConfig{JWKSFile: path, Issuer: "https://id.shop", Audience: "anteroom"})
	if err != nil {
		t.Fatal(err)
	}
	now := t0()
	claims := jwt.MapClaims{"iss": "https://id.shop", "aud": "anteroom", "sub": "user-42", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
	rs := func(key *rsa.PrivateKey, kid string, c jwt.MapClaims) string {
		return craft(t, jwt.SigningMethodRS256, key, map[string]any{"kid": kid}, c)
	}
	es := func(key *ecdsa.PrivateKey, kid string, c jwt.MapClaims) string {
		return craft(t, jwt.SigningMethodES256, key, map[string]any{"kid": kid}, c)
	}
	for _, tc := range []struct {
		name, raw string
		want      error
	}{
		{"RS256 from the RSA key", rs(shop.rsa, "rsa-1", claims), nil},
		{"ES256 from the EC key", es(shop.ec, "ec-1", claims), nil},
		{"ES256 without kid", craft(t, jwt.SigningMethodES256, shop.ec, nil, claims), nil},
		{"RS256 from another key, same kid", rs(other.rsa, "rsa-1", claims), ErrInvalid},
		{"ES256 from another key, same kid", es(other.ec, "ec-1", claims), ErrInvalid},
		{"kid of the other key type", rs(shop.rsa, "ec-1", claims), ErrInvalid},
		{"unknown kid", rs(shop.rsa, "rsa-9", claims), ErrInvalid},
		{"RS512, not pinned", craft(t, jwt.SigningMethodRS512, shop.rsa, map[string]any{"kid": "rsa-1"}, claims), ErrInvalid},
		{"PS256, not pinned", craft(t, jwt.SigningMethodPS256, shop.rsa, map[string]any{"kid": "rsa-1"}, claims), ErrInvalid},
		{"HS256 keyed with the RSA public key", craft(t, jwt.SigningMethodHS256, x509.MarshalPKCS1PublicKey(&shop.rsa.PublicKey), map[string]any{"kid": "rsa-1"}, claims), ErrInvalid},
		{"EdDSA, no such key", craft(t, jwt.SigningMethodEdDSA, shop.ed, nil, claims), ErrInvalid},
		{"alg none", unsigned(`{"alg":"none"}`, `{"sub":"x","exp":99999999999}`), ErrInvalid},
		{"wrong iss", rs(shop.rsa, "rsa-1", with(claims, "iss", "https://evil")), ErrInvalid},
		{"wrong aud", rs(shop.rsa, "rsa-1", with(claims, "aud", "other")), ErrInvalid},
		{"missing sub", rs(shop.rsa, "rsa-1", without(claims, "sub")), ErrInvalid},
		{"missing exp", rs(shop.rsa, "rsa-1", without(claims, "exp")), ErrInvalid},
		{"expired", rs(shop.rsa, "rsa-1", with(claims, "exp", now.Add(-time.Minute).Unix())), ErrInvalid},
		{"nbf in the future", rs(shop.rsa, "rsa-1", with(claims, "nbf", now.Add(time.Minute).Unix())), ErrInvalid},
		{"oversized", rs(shop.rsa, "rsa-1", with(claims, "pad", strings.Repeat("p", maxUserTokenLen))), ErrInvalid},
		{"garbage", "a.b.c", ErrInvalid},
		{"empty", "", ErrInvalid},
	} {
		user, err := u.Verify(tc.raw, now)
		t.Run(tc.name, func(t *testing.T) {
			checkErr(t, err, tc.want)
			if tc.want == nil && user != "user-42" {
				t.Errorf("user: got %q, want user-42", user)
			}
		})
	}

	pinned, err := NewUserVerifier(UserVerifierConfig{JWKSFile: path, Algorithms: []string{"ES256"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pinned.Verify(rs(shop.rsa, "rsa-1", claims), now); err == nil {
		t.Errorf("Algorithms [ES256]: got RS256 accepted, want ErrInvalid")
	}
	if _, err := pinned.Verify(es(shop.ec, "ec-1", claims), now); err != nil {
		t.Errorf("Algorithms [ES256]: got %v for ES256, want success", err)
	}
}

func TestUserVerifierPEMAndReload(t *testing.T) {
	shop := newShopKeys(t)
	path := filepath.Join(t.TempDir(), "keys.pem")
	writePEM := func(keys ...any) {
		t.Helper()
		var out []byte
		for _, k := range keys {
			der, err := x509.MarshalPKIXPublicKey(k)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})...)
		}
		if err := os.WriteFile(path, out, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writePEM(shop.ed.Public())
	u, err := NewUserVerifier(UserVerifierConfig{JWKSFile: path})
	if err != nil {
		t.Fatal(err)
	}
	now := t0()
	claims := jwt.MapClaims{"sub": "u1", "exp": now.Add(time.Hour).Unix()}
	edTok := craft(t, jwt.SigningMethodEdDSA, shop.ed, map[string]any{"kid": "any"}, claims)
	esTok := craft(t, jwt.SigningMethodES256, shop.ec, nil, claims)
	check := func(raw string, want error) {
		t.Helper()
		_, err := u.Verify(raw, now)
		checkErr(t, err, want)
	}
	check(edTok, nil)
	check(esTok, ErrInvalid)
	writePEM(&shop.ec.PublicKey, &shop.rsa.PublicKey)
	if err := u.Reload(); err != nil {
		t.Fatal(err)
	}
	check(edTok, ErrInvalid)
	check(esTok, nil)
	if err := os.WriteFile(path, []byte("not keys"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := u.Reload(); err == nil {
		t.Errorf("Reload of a broken file: got no error, want one")
	}
	check(esTok, nil) // previous keys stay in use
}

func TestNewUserVerifierRejects(t *testing.T) {
	shop := newShopKeys(t)
	good := writeJWKS(t, jose.JSONWebKey{Key: &shop.ec.PublicKey, KeyID: "ec"})
	for name, cfg := range map[string]UserVerifierConfig{
		"no file":        {},
		"missing file":   {JWKSFile: filepath.Join(t.TempDir(), "nope.json")},
		"HS256 pinned":   {JWKSFile: good, Algorithms: []string{"HS256"}},
		"none pinned":    {JWKSFile: good, Algorithms: []string{"none"}},
		"private in set": {JWKSFile: writeJWKS(t, jose.JSONWebKey{Key: shop.ec, KeyID: "ec"})},
	} {
		if _, err := NewUserVerifier(cfg); err == nil {
			t.Errorf("%s: got no error, want one", name)
		}
	}
}
