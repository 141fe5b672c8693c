package node_test

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
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

// TestAdmissionStrictOverHTTP presents forged, stale, misdirected and
// malformed admission tokens to /claim: each is refused with 401 or 403
// problem+json, and not one unit leaves the stock. A control token minted
// the same way but correct is accepted on another event, so each refusal is
// due to the one thing the case changes.
func TestAdmissionStrictOverHTTP(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	const iss, aud = "https://queue.shop.test", "shop-claim"
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir, Issuer: iss, Audience: aud}))
	nodetest.CreateSale(t, n, "strict", openSale(5, 1, 0, 0, 1000))
	nodetest.CreateSale(t, n, "control", openSale(5, 1, 0, 0, 1000))

	keys, err := tokens.OpenKeyDir(keyDir) // the node's own directory
	if err != nil {
		t.Fatal(err)
	}
	kid := keys.Active()
	priv := signingKey(t, keyDir, kid)
	pubDER, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	pubRaw := []byte(priv.Public().(ed25519.PublicKey))
	_, foreign, _ := mustEd25519(t)

	now := time.Now()
	claims := func(over jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{
			"iss": iss, "sub": "alice", "aud": []string{aud}, "event": "strict", "pos": 1,
			"jti": "j-" + t.Name(), "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
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
	genuine := func(over jwt.MapClaims) string { return sign(t, jwt.SigningMethodEdDSA, priv, kid, claims(over)) }

	// Control: the genuine key and claims work (on another event).
	control := genuine(jwt.MapClaims{"event": "control"})
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/control/claim", map[string]string{"X-User-ID": "alice", "Authorization": "Bearer " + control}, nil); a.Status != http.StatusCreated {
		t.Fatalf("control token: %d %s", a.Status, a.Raw)
	}
	issued := tokens.NewIssuer(keys, tokens.IssuerConfig{Issuer: iss, Audience: aud})
	expired, _, err := issued.Issue("strict", "alice", 1, time.Minute, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	wrongEvent, _, err := issued.Issue("control", "alice", 2, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	good := genuine(nil)
	dot := strings.LastIndex(good, ".")
	otherPayload := genuine(jwt.MapClaims{"sub": "mallory"})
	sig := good[dot+1:]
	badSig := good[:dot+1] + flip(sig, len(sig)/2)
	oversized := genuine(jwt.MapClaims{"pad": strings.Repeat("p", 5000)})
	if len(good) > 4096 || len(oversized) <= 4096 {
		t.Fatalf("token sizes: genuine %d, oversized %d; want ≤ and > 4096", len(good), len(oversized))
	}

	cases := []struct {
		name, token string
		status      int
		code        string
	}{
		{"alg none", unsignedJWT(t, map[string]any{"alg": "none", "typ": "JWT", "kid": kid}, claims(nil)), 401, "unauthenticated"},
		{"alg none without kid", unsignedJWT(t, map[string]any{"alg": "none"}, claims(nil)), 401, "unauthenticated"},
		{"HS256 keyed with the raw public key", sign(t, jwt.SigningMethodHS256, pubRaw, kid, claims(nil)), 401, "unauthenticated"},
		{"HS256 keyed with the public key PEM", sign(t, jwt.SigningMethodHS256, pubPEM, kid, claims(nil)), 401, "unauthenticated"},
		{"HS256 keyed with the JWK x", sign(t, jwt.SigningMethodHS256, []byte(base64.RawURLEncoding.EncodeToString(pubRaw)), kid, claims(nil)), 401, "unauthenticated"},
		{"bad signature", badSig, 401, "unauthenticated"},
		{"payload swapped under a genuine signature", otherPayload[:strings.LastIndex(otherPayload, ".")] + "." + sig, 401, "unauthenticated"},
		{"expired", expired, 401, "unauthenticated"},
		{"exp just past the leeway", genuine(jwt.MapClaims{"exp": now.Add(-10 * time.Second).Unix(), "iat": now.Add(-time.Minute).Unix(), "nbf": now.Add(-time.Minute).Unix()}), 401, "unauthenticated"},
		{"nbf in the future", genuine(jwt.MapClaims{"nbf": now.Add(time.Hour).Unix()}), 401, "unauthenticated"},
		{"iat in the future", genuine(jwt.MapClaims{"iat": now.Add(time.Hour).Unix()}), 401, "unauthenticated"},
		{"wrong aud", genuine(jwt.MapClaims{"aud": []string{"anteroom-claim"}}), 401, "unauthenticated"},
		{"wrong iss", genuine(jwt.MapClaims{"iss": "anteroom"}), 401, "unauthenticated"},
		{"missing exp", genuine(jwt.MapClaims{"exp": nil}), 401, "unauthenticated"},
		{"missing nbf", genuine(jwt.MapClaims{"nbf": nil}), 401, "unauthenticated"},
		{"missing aud", genuine(jwt.MapClaims{"aud": nil}), 401, "unauthenticated"},
		{"missing sub", genuine(jwt.MapClaims{"sub": nil}), 401, "unauthenticated"},
		{"missing jti", genuine(jwt.MapClaims{"jti": nil}), 401, "unauthenticated"},
		{"missing event", genuine(jwt.MapClaims{"event": nil}), 401, "unauthenticated"},
		{"missing pos", genuine(jwt.MapClaims{"pos": nil}), 401, "unauthenticated"},
		{"wrong event", wrongEvent, 403, "forbidden"},
		{"unknown kid", sign(t, jwt.SigningMethodEdDSA, foreign, "not-a-key-of-ours", claims(nil)), 401, "unauthenticated"},
		{"foreign key under our kid", sign(t, jwt.SigningMethodEdDSA, foreign, kid, claims(nil)), 401, "unauthenticated"},
		{"no kid", sign(t, jwt.SigningMethodEdDSA, priv, "", claims(nil)), 401, "unauthenticated"},
		{"oversized but genuine", oversized, 401, "unauthenticated"},
		{"garbage", "garbage", 401, "unauthenticated"},
		{"three empty parts", "..", 401, "unauthenticated"},
		{"not UTF-8", "\xff\xfe.\xfd.\xfc", 401, "unauthenticated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/strict/claim", map[string]string{"X-User-ID": "alice", "Authorization": "Bearer " + tc.token}, nil)
			problemOK(t, a, tc.status, tc.code)
		})
	}
	tot, err := n.Claims.Totals(context.Background(), claim.Sale{ID: "strict", Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	if tot.Granted != 0 || tot.Remaining != 5 {
		t.Errorf("strict: granted %d remaining %d, want 0 and 5", tot.Granted, tot.Remaining)
	}
	// The genuine token itself is fine: the refusals above were the cases'.
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/strict/claim", map[string]string{"X-User-ID": "alice", "Authorization": "Bearer " + good}, nil); a.Status != http.StatusCreated {
		t.Errorf("genuine token after the cases: %d %s", a.Status, a.Raw)
	}
}
