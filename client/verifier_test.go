package client_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/tokens"
	"github.com/golang-jwt/jwt/v5"
)

// segment decodes part i of a JWT into a map.
func segment(t *testing.T, tok string, i int) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// resign signs tok's claims again with method and key under tok's kid.
func resign(t *testing.T, tok string, method jwt.SigningMethod, key any) string {
	t.Helper()
	j := jwt.NewWithClaims(method, jwt.MapClaims(segment(t, tok, 1)))
	j.Header["kid"] = segment(t, tok, 0)["kid"]
	s, err := j.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// keyServer serves the node's JWKS (its real bytes) and counts the
// fetches; down makes it answer 503 instead.
type keyServer struct {
	*httptest.Server
	fetches atomic.Int32
	down    atomic.Bool
}

func startKeyServer(t *testing.T, n *node.Node) *keyServer {
	t.Helper()
	ks := &keyServer{}
	ks.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks.fetches.Add(1)
		if ks.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.Get(n.URL() + "/.well-known/jwks.json")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(ks.Close)
	return ks
}

func newVerifier(t *testing.T, cfg client.VerifierConfig) *client.Verifier {
	t.Helper()
	v, err := client.NewVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVerifier checks admission tokens a real node issued with the
// node's published keys: a genuine one passes; forged, expired, another
// event's, another algorithm's and another issuer's are refused; a key
// rotated in on the node is picked up; tokens naming unknown kids do not
// make it fetch the keys more than once per MinRefetch.
func TestVerifier(t *testing.T) {
	keyDir := t.TempDir()
	n := startNode(t, nodetest.HeaderMode(node.Config{SigningKeys: keyDir, KeyReload: 50 * time.Millisecond}))
	nodetest.CreateSale(t, n, "v", openSale(5, 1, 100))
	ctx := ctxFor(t)
	alice := admitted(t, ctx, newClient(t, n, "alice", http.DefaultTransport), "v")
	keys := startKeyServer(t, n)
	v := newVerifier(t, client.VerifierConfig{JWKSURL: keys.URL, MinRefetch: time.Millisecond})

	adm, err := v.Verify(ctx, alice, "v")
	if err != nil || adm.User != "alice" || adm.Event != "v" || adm.Pos < 1 || adm.ID == "" || !adm.ExpiresAt.After(time.Now()) {
		t.Fatalf("a genuine token: %+v %v", adm, err)
	}

	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	pub := jwksKey(t, n)
	hs := jwt.New(jwt.SigningMethodHS256)
	hs.Claims = jwt.MapClaims(segment(t, alice, 1))
	hs.Header["kid"] = segment(t, alice, 0)["kid"]
	confused, err := hs.SignedString(pub) // the public key as an HMAC secret
	if err != nil {
		t.Fatal(err)
	}
	none := strings.Join([]string{b64json(t, map[string]any{"alg": "none", "kid": segment(t, alice, 0)["kid"]}), strings.Split(alice, ".")[1], ""}, ".")
	for name, tok := range map[string]string{
		"forged with another key under the node's kid": resign(t, alice, jwt.SigningMethodEdDSA, stranger),
		"HS256 keyed with the public key":              confused,
		"alg none":                                     none,
		"a changed claim":                              strings.Split(alice, ".")[0] + "." + b64json(t, withClaim(segment(t, alice, 1), "sub", "mallory")) + "." + strings.Split(alice, ".")[2],
		"not a JWT":                                    "hello",
	} {
		if adm, err := v.Verify(ctx, tok, "v"); !errors.Is(err, tokens.ErrInvalid) {
			t.Errorf("%s: %+v %v, want tokens.ErrInvalid", name, adm, err)
		}
	}
	if _, err := v.Verify(ctx, alice, "other"); !errors.Is(err, tokens.ErrWrongEvent) || errors.Is(err, tokens.ErrInvalid) {
		t.Errorf("another event: %v, want tokens.ErrWrongEvent", err)
	}
	late := newVerifier(t, client.VerifierConfig{JWKSURL: keys.URL, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if _, err := late.Verify(ctx, alice, "v"); !errors.Is(err, tokens.ErrInvalid) {
		t.Errorf("an expired token: %v, want tokens.ErrInvalid", err)
	}
	early := newVerifier(t, client.VerifierConfig{JWKSURL: keys.URL, Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	if _, err := early.Verify(ctx, alice, "v"); !errors.Is(err, tokens.ErrInvalid) {
		t.Errorf("a token before its nbf: %v, want tokens.ErrInvalid", err)
	}
	for name, cfg := range map[string]client.VerifierConfig{
		"another issuer":   {JWKSURL: keys.URL, Issuer: "https://other.example"},
		"another audience": {JWKSURL: keys.URL, Audience: "other"},
	} {
		if _, err := newVerifier(t, cfg).Verify(ctx, alice, "v"); !errors.Is(err, tokens.ErrInvalid) {
			t.Errorf("%s: %v, want tokens.ErrInvalid", name, err)
		}
	}

	// Unknown kids, over and over: at most one fetch per MinRefetch.
	slow := newVerifier(t, client.VerifierConfig{JWKSURL: keys.URL, MinRefetch: time.Hour})
	if _, err := slow.Verify(ctx, alice, "v"); err != nil {
		t.Fatal(err)
	}
	before := keys.fetches.Load()
	for range 20 {
		j := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims(segment(t, alice, 1)))
		j.Header["kid"] = client.NewIdempotencyKey() // a random kid
		tok, _ := j.SignedString(stranger)
		if _, err := slow.Verify(ctx, tok, "v"); !errors.Is(err, tokens.ErrInvalid) {
			t.Fatalf("a token of an unknown kid: %v", err)
		}
	}
	if got := keys.fetches.Load() - before; got != 0 {
		t.Errorf("20 unknown kids within MinRefetch of a fetch fetched the keys %d times, want 0", got)
	}

	// The node rotates its key: the verifier fetches the new set for the
	// first token of the new kid.
	ks, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	newKid, err := ks.Rotate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "the node to sign with the rotated key", 0, func() bool { return kidIn(t, n, newKid) })
	bob := admitted(t, ctx, newClient(t, n, "bob", http.DefaultTransport), "v")
	if segment(t, bob, 0)["kid"] != newKid {
		t.Fatalf("bob's token has kid %v, want the rotated %s", segment(t, bob, 0)["kid"], newKid)
	}
	before = keys.fetches.Load()
	if adm, err := v.Verify(ctx, bob, "v"); err != nil || adm.User != "bob" {
		t.Fatalf("a token of the rotated key: %+v %v", adm, err)
	}
	if got := keys.fetches.Load() - before; got != 1 {
		t.Errorf("the rotated key took %d fetches, want 1", got)
	}
	if _, err := v.Verify(ctx, alice, "v"); err != nil {
		t.Errorf("a token of the previous key, still published: %v", err)
	}

	// Many callers at once on a cold verifier: one fetch, every verdict
	// right (run with -race).
	cold := newVerifier(t, client.VerifierConfig{JWKSURL: keys.URL, MinRefetch: time.Hour})
	before = keys.fetches.Load()
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			tok, user := alice, "alice"
			if i%2 == 1 {
				tok, user = bob, "bob"
			}
			adm, err := cold.Verify(ctx, tok, "v")
			if err == nil && adm.User != user {
				err = fmt.Errorf("user %q, want %q", adm.User, user)
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent verify: %v", err)
		}
	}
	if got := keys.fetches.Load() - before; got != 1 {
		t.Errorf("16 concurrent first verifications fetched the keys %d times, want 1", got)
	}
}

// TestVerifierFailsClosed: without keys no token passes, and a cache past
// Refresh that cannot be renewed is not used.
func TestVerifierFailsClosed(t *testing.T) {
	n := startNode(t, nodetest.HeaderMode(node.Config{}))
	nodetest.CreateSale(t, n, "v", openSale(5, 1, 100))
	ctx := ctxFor(t)
	alice := admitted(t, ctx, newClient(t, n, "alice", http.DefaultTransport), "v")

	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close() // nothing listens there now
	v := newVerifier(t, client.VerifierConfig{JWKSURL: gone.URL + "/.well-known/jwks.json"})
	_, err := v.Verify(ctx, alice, "v")
	var ke *client.KeysError
	if !errors.As(err, &ke) || !errors.Is(err, tokens.ErrInvalid) {
		t.Fatalf("JWKS unreachable: %v, want a *KeysError wrapping tokens.ErrInvalid", err)
	}

	keys := startKeyServer(t, n)
	var skew atomic.Int64
	v = newVerifier(t, client.VerifierConfig{JWKSURL: keys.URL, Refresh: time.Minute, Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }})
	if _, err := v.Verify(ctx, alice, "v"); err != nil {
		t.Fatal(err)
	}
	keys.down.Store(true)
	if _, err := v.Verify(ctx, alice, "v"); err != nil {
		t.Errorf("keys down, cache fresh: %v, want the cache to answer", err)
	}
	skew.Store(int64(2 * time.Minute)) // past Refresh, within the token's life
	if _, err := v.Verify(ctx, alice, "v"); !errors.As(err, &ke) {
		t.Errorf("keys down, cache stale: %v, want a *KeysError", err)
	}
	keys.down.Store(false)
	skew.Store(int64(3 * time.Minute)) // past MinRefetch too
	if _, err := v.Verify(ctx, alice, "v"); err != nil {
		t.Errorf("keys back: %v", err)
	}
}

// jwksKey returns the raw public key of the node's first JWK.
func jwksKey(t *testing.T, n *node.Node) []byte {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/.well-known/jwks.json", nil, nil)
	var set struct {
		Keys []struct {
			Kid, X string
		} `json:"keys"`
	}
	if err := json.Unmarshal(a.Raw, &set); err != nil || len(set.Keys) == 0 {
		t.Fatalf("jwks %s: %v", a.Raw, err)
	}
	x, err := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// kidIn reports whether kid is n's active key, first in its JWKS.
func kidIn(t *testing.T, n *node.Node, kid string) bool {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/.well-known/jwks.json", nil, nil)
	var set struct {
		Keys []struct{ Kid string } `json:"keys"`
	}
	return json.Unmarshal(a.Raw, &set) == nil && len(set.Keys) > 0 && set.Keys[0].Kid == kid
}

func b64json(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}

func withClaim(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}
