package node_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
)

// TestAdmissionInteropOverHTTP plays a gateway that knows only the
// issuer's URL: it reads /.well-known/openid-configuration, fetches the
// jwks_uri it names, and verifies a real admission token (obtained through
// join and status) with go-jose, an independent JOSE implementation.
func TestAdmissionInteropOverHTTP(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	const iss, aud = "https://queue.shop.test", "shop-claim"
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Issuer: iss, Audience: aud}))
	nodetest.CreateSale(t, n, "interop", openSale(5, 1, 0, 0, 1000))
	token := nodetest.AdmitUser(t, n, "interop", "alice")

	d := nodetest.Call(t, http.MethodGet, n.URL()+"/.well-known/openid-configuration", nil, nil)
	if d.Status != http.StatusOK {
		t.Fatalf("discovery: %d %s", d.Status, d.Raw)
	}
	var doc struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.Unmarshal(d.Raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Issuer != iss || doc.JWKSURI != iss+"/.well-known/jwks.json" || len(doc.Algs) != 1 || doc.Algs[0] != "EdDSA" {
		t.Fatalf("discovery: got %s, want issuer %s, its jwks_uri and [EdDSA]", d.Raw, iss)
	}
	if cc := d.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age") {
		t.Errorf("discovery with a URL issuer: Cache-Control %q, want cacheable", cc)
	}
	if iat := payloadOf(t, token); iat["iss"] != doc.Issuer {
		t.Fatalf("admission iss %v, discovery issuer %s: gateways would refuse", iat["iss"], doc.Issuer)
	}

	// The public host resolves to this node.
	u, err := url.Parse(doc.JWKSURI)
	if err != nil {
		t.Fatal(err)
	}
	k := nodetest.Call(t, http.MethodGet, n.URL()+u.Path, nil, nil)
	if k.Status != http.StatusOK || k.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("jwks: %d %q %s", k.Status, k.Header.Get("Content-Type"), k.Raw)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(k.Raw, &set); err != nil {
		t.Fatalf("go-jose cannot read the JWKS: %v", err)
	}
	for _, key := range set.Keys {
		if !key.Valid() || !key.IsPublic() || key.Algorithm != "EdDSA" || key.Use != "sig" || key.KeyID == "" {
			t.Errorf("JWK %s: valid=%v public=%v alg=%s use=%s, want a public EdDSA sig key with a kid", key.KeyID, key.Valid(), key.IsPublic(), key.Algorithm, key.Use)
		}
	}

	var algs []jose.SignatureAlgorithm
	for _, a := range doc.Algs {
		algs = append(algs, jose.SignatureAlgorithm(a))
	}
	tok, err := josejwt.ParseSigned(token, algs)
	if err != nil {
		t.Fatalf("go-jose parse: %v", err)
	}
	if kid := tok.Headers[0].KeyID; len(set.Key(kid)) != 1 {
		t.Fatalf("token kid %q is not in the JWKS", kid)
	}
	var std josejwt.Claims
	var own struct {
		Event string `json:"event"`
		Pos   int64  `json:"pos"`
	}
	if err := tok.Claims(set, &std, &own); err != nil {
		t.Fatalf("go-jose verify with the fetched JWKS: %v", err)
	}
	err = std.ValidateWithLeeway(josejwt.Expected{Issuer: doc.Issuer, AnyAudience: josejwt.Audience{aud}, Time: time.Now()}, 5*time.Second)
	if err != nil {
		t.Errorf("go-jose claims: %v", err)
	}
	if std.Subject != "alice" || own.Event != "interop" || own.Pos < 1 || std.ID == "" || std.Expiry == nil || std.NotBefore == nil || std.IssuedAt == nil {
		t.Errorf("go-jose claims: sub=%s event=%s pos=%d jti=%q exp=%v nbf=%v iat=%v", std.Subject, own.Event, own.Pos, std.ID, std.Expiry, std.NotBefore, std.IssuedAt)
	}
	if ttl := std.Expiry.Time().Sub(std.IssuedAt.Time()); ttl <= 0 || ttl > time.Hour {
		t.Errorf("admission lifetime %v, want minutes", ttl)
	}

	// go-jose refuses what anteroom refuses: a forged signature.
	dot := strings.LastIndex(token, ".")
	forged, err := josejwt.ParseSigned(token[:dot+1]+flip(token[dot+1:], 10), algs)
	if err == nil {
		err = forged.Claims(set, &std)
	}
	if err == nil {
		t.Error("go-jose accepted a forged signature")
	}

	// And the token the gateway accepted is the one /claim accepts.
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/events/interop/claim", map[string]string{"X-User-ID": "alice", "Authorization": "Bearer " + token}, nil); a.Status != http.StatusCreated {
		t.Errorf("claim: %d %s", a.Status, a.Raw)
	}
}
