package node_test

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
	"github.com/golang-jwt/jwt/v5"
)

// TestAdmissionSignatureRequiredOverHTTP presents to /claim admission
// tokens whose Ed25519 signature is missing or wrong but which carry
// whatever else a node might trust instead — a genuine token's header and
// payload, or an "amac" header computed from the ticket secret, which
// `anteroom invite` also holds — including one minted for a user who never
// queued. Each is refused with 401 and not one unit leaves the stock.
func TestAdmissionSignatureRequiredOverHTTP(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), DataDir: dir}))
	nodetest.CreateSale(t, n, "sig", openSale(10, 1, 0, 0, 1000))
	genuine := nodetest.AdmitUser(t, n, "sig", "alice")
	secret, err := tokens.LoadOrCreateSecret(filepath.Join(dir, "ticket-secret")) // the node's own
	if err != nil {
		t.Fatal(err)
	}
	dot := strings.LastIndex(genuine, ".")
	sig := genuine[dot+1:]
	forged := secretMinted(t, secret, kidOf(t, genuine), jwt.MapClaims{
		"iss": "anteroom", "sub": "mallory", "aud": []string{"anteroom-claim"}, "event": "sig", "pos": 1,
		"jti": "forged", "iat": time.Now().Unix(), "nbf": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
	})
	zeroSig := base64.RawURLEncoding.EncodeToString(make([]byte, ed25519.SignatureSize))
	cases := []struct{ name, user, token string }{
		{"signature removed", "alice", genuine[:dot+1]},
		{"signature altered", "alice", genuine[:dot+1] + flip(sig, len(sig)/2)},
		{"signature of zeros", "alice", genuine[:dot+1] + zeroSig},
		{"minted with the ticket secret, empty signature", "mallory", forged},
		{"minted with the ticket secret, zero signature", "mallory", forged + zeroSig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/sig/claim",
				map[string]string{"Authorization": "Bearer " + tc.token, "X-User-ID": tc.user}, nil)
			problemOK(t, a, http.StatusUnauthorized, "unauthenticated")
		})
	}
	tot, err := n.Claims.Totals(context.Background(), claim.Sale{ID: "sig", Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	if tot.Granted != 0 || tot.Remaining != 10 {
		t.Errorf("granted %d remaining %d, want 0 and 10", tot.Granted, tot.Remaining)
	}
	// The genuine token itself is fine: the refusals were the cases'.
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/sig/claim",
		map[string]string{"Authorization": "Bearer " + genuine, "X-User-ID": "alice"}, nil); a.Status != http.StatusCreated {
		t.Errorf("genuine token: %d %s", a.Status, a.Raw)
	}
}

// TestAdmissionNodeAgreesWithJWKSOverHTTP checks that a node accepts
// exactly the admission tokens that a plain JWKS verifier (golang-jwt with
// the keys from /.well-known/jwks.json, as docs/integrate.md's gateway section says)
// accepts: genuine tokens of the node and of its key, and the same tokens
// stripped, tampered or re-headed.
func TestAdmissionNodeAgreesWithJWKSOverHTTP(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	dir := t.TempDir()
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), DataDir: dir}))
	nodetest.CreateSale(t, n, "agree", openSale(100, 1, 0, 0, 1000))
	secret, err := tokens.LoadOrCreateSecret(filepath.Join(dir, "ticket-secret")) // the node's own
	if err != nil {
		t.Fatal(err)
	}
	gateway := jwksVerifier(t, n.URL()+"/.well-known/jwks.json")

	var toks []string
	for i := range 3 {
		tok := nodetest.AdmitUser(t, n, "agree", fmt.Sprint("u", i))
		toks = append(toks, tok)
	}
	kid := kidOf(t, toks[0])
	priv := signingKey(t, filepath.Join(dir, "keys"), kid)
	now := time.Now()
	claims := func(user string) jwt.MapClaims {
		return jwt.MapClaims{
			"iss": "anteroom", "sub": user, "aud": []string{"anteroom-claim"}, "event": "agree", "pos": 1,
			"jti": "j-" + user, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		}
	}
	// Signed by the node's key directly, with extra header parameters.
	direct := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims("direct"))
	direct.Header["kid"] = kid
	direct.Header["amac"] = "ignored-by-gateways"
	raw, err := direct.SignedString(priv)
	if err != nil {
		t.Fatal(err)
	}
	toks = append(toks, raw)
	// Derived from genuine ones: each must be refused by both.
	g := toks[0]
	dot := strings.LastIndex(g, ".")
	parts := strings.Split(g, ".")
	toks = append(toks,
		g[:dot+1],
		g[:dot+1]+flip(g[dot+1:], 3),
		reencodeHeader(t, parts[0], func(h map[string]any) { h["typ"] = "JOSE" })+"."+parts[1]+"."+parts[2],
		secretMinted(t, secret, kid, claims("mallory")),
	)

	accepted := 0
	for i, tok := range toks {
		want := gateway(tok) == nil
		a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/agree/claim",
			map[string]string{"Authorization": "Bearer " + tok, "X-User-ID": subOf(t, tok)}, nil)
		// 200 is a replay of an accepted token's claim: accepted as well.
		if got := a.Status == http.StatusCreated || a.Status == http.StatusOK; got != want {
			t.Errorf("token %d: node %d %s, JWKS verifier accepts=%v (err %v)", i, a.Status, a.Raw, want, gateway(tok))
		}
		if want {
			accepted++
		}
	}
	if accepted != 4 {
		t.Errorf("the JWKS verifier accepted %d tokens, want the 4 genuine ones", accepted)
	}
}

// jwksVerifier fetches the JWKS at url and returns a verifier of admission
// tokens written the way a gateway would: golang-jwt, alg pinned to EdDSA,
// the key chosen by kid, iss, aud, exp, nbf and iat checked, and the
// claims anteroom always writes required.
func jwksVerifier(t *testing.T, url string) func(string) error {
	t.Helper()
	k := nodetest.Call(t, http.MethodGet, url, nil, nil)
	if k.Status != http.StatusOK {
		t.Fatalf("jwks: %d %s", k.Status, k.Raw)
	}
	var set struct {
		Keys []struct{ Kty, Crv, Kid, X string }
	}
	if err := json.Unmarshal(k.Raw, &set); err != nil {
		t.Fatal(err)
	}
	pubs := map[string]ed25519.PublicKey{}
	for _, key := range set.Keys {
		x, err := base64.RawURLEncoding.DecodeString(key.X)
		if err != nil || key.Kty != "OKP" || key.Crv != "Ed25519" || len(x) != ed25519.PublicKeySize {
			t.Fatalf("JWK %+v is not an Ed25519 public key", key)
		}
		pubs[key.Kid] = x
	}
	return func(raw string) error {
		c := jwt.MapClaims{}
		_, err := jwt.NewParser(jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithIssuer("anteroom"),
			jwt.WithAudience("anteroom-claim"), jwt.WithExpirationRequired(), jwt.WithIssuedAt(),
			jwt.WithNotBeforeRequired(), jwt.WithLeeway(5*time.Second),
		).ParseWithClaims(raw, c, func(tok *jwt.Token) (any, error) {
			kid, _ := tok.Header["kid"].(string)
			if pub, ok := pubs[kid]; ok {
				return pub, nil
			}
			return nil, fmt.Errorf("kid %q not in the JWKS", kid)
		})
		if err != nil {
			return err
		}
		for _, name := range []string{"sub", "jti", "event"} {
			if s, _ := c[name].(string); s == "" {
				return fmt.Errorf("missing %s", name)
			}
		}
		if c["event"] != "agree" {
			return fmt.Errorf("event %v", c["event"])
		}
		if pos, _ := c["pos"].(float64); pos < 1 {
			return fmt.Errorf("pos %v", c["pos"])
		}
		return nil
	}
}

// secretMinted is what a holder of the ticket secret could write: an
// admission token with an "amac" header keyed from the secret (as nodes
// before issue 12 derived it) and an empty signature.
func secretMinted(t *testing.T, secret []byte, kid string, claims jwt.MapClaims) string {
	t.Helper()
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("anteroom/admission-mac/v1"))
	key := m.Sum(nil)
	pb, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	payload := base64.RawURLEncoding.EncodeToString(pb)
	m = hmac.New(sha256.New, key)
	m.Write([]byte(kid + "." + payload))
	hb, err := json.Marshal(map[string]string{"alg": "EdDSA", "kid": kid, "typ": "JWT",
		"amac": base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])})
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(hb) + "." + payload + "."
}

// reencodeHeader decodes a JOSE header segment, edits it and encodes it
// again.
func reencodeHeader(t *testing.T, seg string, edit func(map[string]any)) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	edit(h)
	out, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(out)
}

// subOf returns the sub claim of a compact JWT, unverified.
func subOf(t *testing.T, tok string) string {
	t.Helper()
	s, _ := payloadOf(t, tok)["sub"].(string)
	return s
}
