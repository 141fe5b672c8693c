package node_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// TestIdentityHeader: the trusted gateway header names the caller; the
// per-user limit and claim lookups key on it.
func TestIdentityHeader(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "hdr", openSale(10, 1, 0, 0, 1000))
	ev := n.URL() + "/events/hdr"

	alice := nodetest.AdmitUser(t, n, "hdr", "alice")
	if sub := nodetest.Str(payloadOf(t, alice), "sub"); sub != "alice" {
		t.Fatalf("admission sub %q, want alice", sub)
	}
	c := nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"X-User-ID": "alice", "Authorization": "Bearer " + alice}, nil)
	if c.Status != http.StatusCreated {
		t.Fatalf("claim: %d %s", c.Status, c.Raw)
	}
	id := nodetest.Str(c.Body, "claim_id")
	again := nodetest.AdmitUser(t, n, "hdr", "alice") // a new token, the same user
	problemOK(t, nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"X-User-ID": "alice", "Authorization": "Bearer " + again, "Idempotency-Key": "second"}, nil), http.StatusConflict, "limit_reached")
	problemOK(t, nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"X-User-ID": "bob", "Authorization": "Bearer " + again}, nil), http.StatusForbidden, "forbidden")
	if a := nodetest.Call(t, http.MethodGet, ev+"/claims/"+id, map[string]string{"X-User-ID": "alice"}, nil); a.Status != http.StatusOK {
		t.Errorf("alice's lookup: %d %s", a.Status, a.Raw)
	}
	problemOK(t, nodetest.Call(t, http.MethodGet, ev+"/claims/"+id, map[string]string{"X-User-ID": "bob"}, nil), http.StatusNotFound, "not_found")
	problemOK(t, nodetest.Call(t, http.MethodGet, ev+"/claims/"+id, nil, nil), http.StatusUnauthorized, "unauthenticated")

	// Discovery without a URL issuer: not published (jwks_uri would have
	// to come from the client's Host); see TestDiscoveryIgnoresHost.
	d := nodetest.Call(t, http.MethodGet, n.URL()+"/.well-known/openid-configuration", nil, nil)
	problemOK(t, d, http.StatusNotFound, "not_found")
}

// TestIdentityAnonymous: a visitor cookie is minted on join, names the
// caller afterwards, and is the only way to see one's claims.
func TestIdentityAnonymous(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "anonymous", TrustedProxies: []string{"127.0.0.1"}})
	nodetest.CreateSale(t, n, "anon", openSale(10, 1, 0, 0, 1000))
	ev := n.URL() + "/events/anon"

	j := nodetest.Call(t, http.MethodPost, ev+"/join", nil, nil)
	if j.Status != http.StatusOK {
		t.Fatalf("join: %d %s", j.Status, j.Raw)
	}
	visitor, line := cookieOf(j, "anteroom_visitor")
	if visitor == "" {
		t.Fatalf("join set no visitor cookie: %v", j.Header.Values("Set-Cookie"))
	}
	low := strings.ToLower(line)
	for _, attr := range []string{"httponly", "samesite=lax", "path=/", "max-age="} {
		if !strings.Contains(low, attr) {
			t.Errorf("visitor cookie %q lacks %s", line, attr)
		}
	}
	if strings.Contains(low, "secure") {
		t.Errorf("visitor cookie %q is Secure over plain HTTP", line)
	}
	mine := map[string]string{"Cookie": "anteroom_visitor=" + visitor}

	// The cookie brings back the same queue place and is not replaced.
	again := nodetest.Call(t, http.MethodPost, ev+"/join", mine, nil)
	if again.Status != http.StatusOK || nodetest.Str(again.Body, "ticket") != nodetest.Str(j.Body, "ticket") {
		t.Errorf("second join: %d %s, want the same ticket", again.Status, again.Raw)
	}
	if v, _ := cookieOf(again, "anteroom_visitor"); v != "" {
		t.Errorf("second join replaced a valid visitor cookie")
	}
	// Behind a TLS-terminating proxy the cookie is Secure.
	tls := nodetest.Call(t, http.MethodPost, ev+"/join", map[string]string{"X-Forwarded-Proto": "https"}, nil)
	if _, l := cookieOf(tls, "anteroom_visitor"); !strings.Contains(strings.ToLower(l), "secure") {
		t.Errorf("visitor cookie under TLS %q is not Secure", l)
	}
	// A tampered cookie on join: a fresh visitor, not the victim.
	tampered := flip(visitor, 0)
	fresh := nodetest.Call(t, http.MethodPost, ev+"/join", map[string]string{"Cookie": "anteroom_visitor=" + tampered}, nil)
	other, _ := cookieOf(fresh, "anteroom_visitor")
	if fresh.Status != http.StatusOK || other == "" || other == visitor || nodetest.Str(fresh.Body, "ticket") == nodetest.Str(j.Body, "ticket") {
		t.Fatalf("join with a tampered cookie: %d %s cookie %q, want a new visitor", fresh.Status, fresh.Raw, other)
	}
	theirs := map[string]string{"Cookie": "anteroom_visitor=" + other}

	// Status with the ticket cookie, then the claim with the visitor cookie.
	ticketCookie := "anteroom_t_anon=" + nodetest.Str(j.Body, "ticket")
	var token string
	nodetest.WaitFor(t, "admission", 10*time.Second, func() bool {
		s := nodetest.Call(t, http.MethodGet, ev+"/status", map[string]string{"Cookie": ticketCookie + "; anteroom_visitor=" + visitor}, nil)
		token = nodetest.Str(s.Body, "admission_token")
		return token != ""
	})
	if sub := nodetest.Str(payloadOf(t, token), "sub"); sub != strings.Split(visitor, ".")[0] {
		t.Fatalf("admission sub %q, want the visitor id of %q", sub, visitor)
	}
	problemOK(t, nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"Authorization": "Bearer " + token, "Cookie": theirs["Cookie"]}, nil), http.StatusForbidden, "forbidden")
	c := nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"Authorization": "Bearer " + token, "Cookie": mine["Cookie"]}, nil)
	if c.Status != http.StatusCreated {
		t.Fatalf("claim: %d %s", c.Status, c.Raw)
	}
	problemOK(t, nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"Authorization": "Bearer " + token, "Cookie": mine["Cookie"], "Idempotency-Key": "another"}, nil), http.StatusConflict, "limit_reached")

	look := ev + "/claims/" + nodetest.Str(c.Body, "claim_id")
	if a := nodetest.Call(t, http.MethodGet, look, mine, nil); a.Status != http.StatusOK || nodetest.Str(a.Body, "claim_id") != nodetest.Str(c.Body, "claim_id") {
		t.Errorf("own lookup: %d %s", a.Status, a.Raw)
	}
	problemOK(t, nodetest.Call(t, http.MethodGet, look, theirs, nil), http.StatusNotFound, "not_found")
	problemOK(t, nodetest.Call(t, http.MethodGet, look, map[string]string{"Cookie": "anteroom_visitor=" + tampered}, nil), http.StatusUnauthorized, "unauthenticated")
	problemOK(t, nodetest.Call(t, http.MethodGet, look, map[string]string{"Cookie": "anteroom_visitor=garbage"}, nil), http.StatusUnauthorized, "unauthenticated")
	problemOK(t, nodetest.Call(t, http.MethodGet, look, map[string]string{"X-User-ID": strings.Split(visitor, ".")[0]}, nil), http.StatusUnauthorized, "unauthenticated")
}

// flip changes the character at i of s to another base64url character.
func flip(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// shop plays the shop's identity provider: its keys and the JWKS file
// anteroom reads.
type shop struct {
	rsa  *rsa.PrivateKey
	ec   *ecdsa.PrivateKey
	file string
}

func newShop(t *testing.T) *shop {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := &shop{rsa: rk, ec: ek, file: filepath.Join(t.TempDir(), "shop-jwks.json")}
	s.publish(t,
		jose.JSONWebKey{Key: &rk.PublicKey, KeyID: "rsa-1", Algorithm: "RS256", Use: "sig"},
		jose.JSONWebKey{Key: &ek.PublicKey, KeyID: "ec-1", Algorithm: "ES256", Use: "sig"},
	)
	return s
}

// publish writes keys as the JWKS file, atomically (as a secret volume or
// a config management tool would).
func (s *shop) publish(t *testing.T, keys ...jose.JSONWebKey) {
	t.Helper()
	data, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	tmp := s.file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.file); err != nil {
		t.Fatal(err)
	}
}

// userClaims are a valid shop token's claims for user, with overrides.
func userClaims(user string, over jwt.MapClaims) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{
		"iss": "https://shop.example", "aud": "anteroom", "sub": user,
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
	}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// TestIdentityJWT: the shop's own user token (RS256 or ES256, from a JWKS
// file) names the caller; X-User-ID never does.
func TestIdentityJWT(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	s := newShop(t)
	n := nodetest.Start(t, node.Config{
		RedisURL: r.URL(), NATSURL: ns.URL(), Identity: "jwt", UserJWKS: s.file,
		UserIssuer: "https://shop.example", UserAudience: "anteroom", KeyReload: 50 * time.Millisecond,
	})
	nodetest.CreateSale(t, n, "jwt", openSale(10, 1, 0, 0, 1000))
	ev := n.URL() + "/events/jwt"
	join := func(hdr map[string]string) nodetest.Answer {
		return nodetest.Call(t, http.MethodPost, ev+"/join", hdr, nil)
	}

	alice := sign(t, jwt.SigningMethodRS256, s.rsa, "rsa-1", userClaims("alice", nil))
	bob := sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims("bob", nil))

	ja := join(map[string]string{"X-User-Token": alice})
	if ja.Status != http.StatusOK {
		t.Fatalf("join with an RS256 user token: %d %s", ja.Status, ja.Raw)
	}
	jb := join(map[string]string{"X-User-Token": "Bearer " + bob})
	if jb.Status != http.StatusOK || nodetest.Str(jb.Body, "ticket") == nodetest.Str(ja.Body, "ticket") {
		t.Fatalf("join with an ES256 user token: %d %s", jb.Status, jb.Raw)
	}
	// A spoofed X-User-ID counts for nothing: alone it is 401, next to
	// alice's token the caller is alice.
	spoof := join(map[string]string{"X-User-ID": "alice"})
	problemOK(t, spoof, http.StatusUnauthorized, "unauthenticated")
	mixed := join(map[string]string{"X-User-Token": alice, "X-User-ID": "bob"})
	if mixed.Status != http.StatusOK || nodetest.Str(mixed.Body, "ticket") != nodetest.Str(ja.Body, "ticket") {
		t.Errorf("alice's token with X-User-ID bob: %d %s, want alice's ticket", mixed.Status, mixed.Raw)
	}

	_, _, foreign := mustEd25519(t)
	rejected := map[string]map[string]string{
		"token in Authorization":   {"Authorization": "Bearer " + alice},
		"expired":                  {"X-User-Token": sign(t, jwt.SigningMethodRS256, s.rsa, "rsa-1", userClaims("alice", jwt.MapClaims{"exp": time.Now().Add(-time.Minute).Unix(), "iat": time.Now().Add(-time.Hour).Unix()}))},
		"without exp":              {"X-User-Token": sign(t, jwt.SigningMethodRS256, s.rsa, "rsa-1", userClaims("alice", jwt.MapClaims{"exp": nil}))},
		"without sub":              {"X-User-Token": sign(t, jwt.SigningMethodRS256, s.rsa, "rsa-1", userClaims("alice", jwt.MapClaims{"sub": nil}))},
		"another issuer":           {"X-User-Token": sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims("alice", jwt.MapClaims{"iss": "https://evil.example"}))},
		"another audience":         {"X-User-Token": sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims("alice", jwt.MapClaims{"aud": "elsewhere"}))},
		"unknown key":              {"X-User-Token": sign(t, jwt.SigningMethodEdDSA, foreign, "ed-1", userClaims("alice", nil))},
		"alg none":                 {"X-User-Token": unsignedJWT(t, map[string]any{"alg": "none", "kid": "rsa-1"}, userClaims("alice", nil))},
		"tampered":                 {"X-User-Token": alice[:strings.LastIndex(alice, ".")] + "." + strings.Repeat("A", 342)},
		"garbage":                  {"X-User-Token": "garbage"},
		"an anteroom queue ticket": {"X-User-Token": nodetest.Str(ja.Body, "ticket")},
		"sub unusable as a user":   {"X-User-Token": sign(t, jwt.SigningMethodES256, s.ec, "ec-1", userClaims("has space", nil))},
	}
	for name, hdr := range rejected {
		t.Run(name, func(t *testing.T) { problemOK(t, join(hdr), http.StatusUnauthorized, "unauthenticated") })
	}

	// The admission token carries the verified user; claims and lookups
	// check the caller against it.
	token := pollAdmission(t, n, "jwt", nodetest.Str(ja.Body, "ticket"))
	if sub := nodetest.Str(payloadOf(t, token), "sub"); sub != "alice" {
		t.Fatalf("admission sub %q, want alice", sub)
	}
	problemOK(t, nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"Authorization": "Bearer " + token, "X-User-Token": bob}, nil), http.StatusForbidden, "forbidden")
	c := nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"Authorization": "Bearer " + token, "X-User-Token": alice, "X-User-ID": "bob"}, nil)
	if c.Status != http.StatusCreated {
		t.Fatalf("alice's claim: %d %s", c.Status, c.Raw)
	}
	// The per-user limit binds alice, whatever token she comes back with.
	second := pollAdmission(t, n, "jwt", nodetest.Str(mixed.Body, "ticket"))
	problemOK(t, nodetest.Call(t, http.MethodPost, ev+"/claim", map[string]string{"Authorization": "Bearer " + second, "X-User-Token": alice, "Idempotency-Key": "again"}, nil), http.StatusConflict, "limit_reached")
	look := ev + "/claims/" + nodetest.Str(c.Body, "claim_id")
	if a := nodetest.Call(t, http.MethodGet, look, map[string]string{"X-User-Token": alice}, nil); a.Status != http.StatusOK {
		t.Errorf("alice's lookup: %d %s", a.Status, a.Raw)
	}
	problemOK(t, nodetest.Call(t, http.MethodGet, look, map[string]string{"X-User-Token": bob}, nil), http.StatusNotFound, "not_found")
	problemOK(t, nodetest.Call(t, http.MethodGet, look, map[string]string{"X-User-ID": "alice"}, nil), http.StatusUnauthorized, "unauthenticated")

	// The shop rotates its keys: the node picks up the new file.
	ek2, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	carol := sign(t, jwt.SigningMethodES256, ek2, "ec-2", userClaims("carol", nil))
	problemOK(t, join(map[string]string{"X-User-Token": carol}), http.StatusUnauthorized, "unauthenticated")
	s.publish(t,
		jose.JSONWebKey{Key: &s.ec.PublicKey, KeyID: "ec-1", Algorithm: "ES256", Use: "sig"},
		jose.JSONWebKey{Key: &ek2.PublicKey, KeyID: "ec-2", Algorithm: "ES256", Use: "sig"},
	)
	nodetest.WaitFor(t, "the node to reload the shop's keys", 5*time.Second, func() bool {
		return join(map[string]string{"X-User-Token": carol}).Status == http.StatusOK
	})
	problemOK(t, join(map[string]string{"X-User-Token": alice}), http.StatusUnauthorized, "unauthenticated") // rsa-1 was dropped
}

// mustEd25519 returns a fresh Ed25519 key pair and the private key as any.
func mustEd25519(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey, any) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv, priv
}
