package tokens

import (
	"crypto"
	"encoding/json"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
)

// TestAdmissionVerifiesWithGoJose plays a downstream gateway: it knows only
// the JWKS JSON and verifies admission tokens with an independent JOSE
// implementation, across a rotation.
func TestAdmissionVerifiesWithGoJose(t *testing.T) {
	keys := openTestKeys(t, t.TempDir())
	iss := NewIssuer(keys, IssuerConfig{})
	oldTok, _, err := iss.Issue("ev", "alice", 9, 10*time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keys.Rotate(t0()); err != nil {
		t.Fatal(err)
	}
	newTok, _, err := iss.Issue("ev", "bob", 10, 10*time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}

	var set jose.JSONWebKeySet
	if err := json.Unmarshal(keys.JWKS(), &set); err != nil {
		t.Fatalf("go-jose cannot read our JWKS: %v", err)
	}
	for _, k := range set.Keys {
		tp, err := k.Thumbprint(crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := k.KeyID, b64(tp); got != want {
			t.Errorf("kid: got %s, want the RFC 7638 thumbprint %s computed by go-jose", got, want)
		}
		if !k.Valid() || !k.IsPublic() || k.Algorithm != "EdDSA" || k.Use != "sig" {
			t.Errorf("JWK %s: got valid=%v public=%v alg=%s use=%s, want a public EdDSA sig key",
				k.KeyID, k.Valid(), k.IsPublic(), k.Algorithm, k.Use)
		}
	}

	for _, tc := range []struct {
		raw, wantSub string
		wantPos      int64
	}{{oldTok, "alice", 9}, {newTok, "bob", 10}} {
		tok, err := josejwt.ParseSigned(tc.raw, []jose.SignatureAlgorithm{jose.EdDSA})
		if err != nil {
			t.Fatalf("go-jose parse: %v", err)
		}
		var std josejwt.Claims
		var own struct {
			Event string `json:"event"`
			Pos   int64  `json:"pos"`
		}
		if err := tok.Claims(set, &std, &own); err != nil {
			t.Fatalf("go-jose verify with JWKS: %v", err)
		}
		err = std.ValidateWithLeeway(josejwt.Expected{
			Issuer:      "anteroom",
			AnyAudience: josejwt.Audience{"anteroom-claim"},
			Time:        t0().Add(time.Minute),
		}, 5*time.Second)
		if err != nil {
			t.Errorf("go-jose claims: %v", err)
		}
		if std.Subject != tc.wantSub || own.Event != "ev" || own.Pos != tc.wantPos || std.ID == "" {
			t.Errorf("go-jose claims: got sub=%s event=%s pos=%d jti=%q, want sub=%s event=ev pos=%d and a jti",
				std.Subject, own.Event, own.Pos, std.ID, tc.wantSub, tc.wantPos)
		}
	}
}
