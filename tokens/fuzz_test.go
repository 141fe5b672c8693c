package tokens

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// checkVerdict fails unless err is nil or wraps exactly one of the two
// sentinels callers map to HTTP.
func checkVerdict(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	invalid, wrong := errors.Is(err, ErrInvalid), errors.Is(err, ErrWrongEvent)
	if invalid == wrong {
		t.Fatalf("got error %v, want one wrapping exactly one of ErrInvalid, ErrWrongEvent", err)
	}
}

// garbageSeeds are inputs every verifier fuzz target starts from.
func garbageSeeds() []string {
	return []string{
		"", ".", "..", "a.b.c", "a.b.c.d", "\x00\xff",
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
		"eyJhbGciOiJIUzI1NiJ9.e30." + strings.Repeat("A", 43),
		"eyJ9.eyJ9.eyJ9", strings.Repeat(".", 100),
	}
}

func FuzzTicketVerify(f *testing.F) {
	tickets, err := NewTickets(testSecret(1))
	if err != nil {
		f.Fatal(err)
	}
	good, err := tickets.Sign(Ticket{Event: "ev", User: "alice", Seq: 5, IssuedAt: t0()})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "ev")
	f.Add(good, "other")
	f.Add(craft(f, jwt.SigningMethodHS256, testSecret(1), nil, jwt.MapClaims{"ev": "ev", "sub": "a", "seq": 1.5, "iat": 1}), "ev")
	for _, s := range garbageSeeds() {
		f.Add(s, "ev")
	}
	f.Fuzz(func(t *testing.T, raw, event string) {
		got, err := tickets.Verify(raw, event)
		checkVerdict(t, err)
		if err != nil {
			return
		}
		if got.Event != event || got.User == "" || got.Seq < 1 {
			t.Fatalf("accepted %q as %+v for event %q", raw, got, event)
		}
	})
}

func FuzzAdmissionVerify(f *testing.F) {
	keys, err := OpenKeyDir(filepath.Join(f.TempDir(), "keys"))
	if err != nil {
		f.Fatal(err)
	}
	iss := NewIssuer(keys, IssuerConfig{})
	good, _, err := iss.Issue("ev", "alice", 3, time.Minute, t0())
	if err != nil {
		f.Fatal(err)
	}
	snap := keys.snap.Load()
	f.Add(good, "ev")
	f.Add(good, "other")
	f.Add(craft(f, jwt.SigningMethodEdDSA, snap.signer, map[string]any{"kid": snap.active},
		jwt.MapClaims{"iss": "anteroom", "aud": []any{"anteroom-claim", 1}, "exp": 1e300, "nbf": -1e300, "pos": 1}), "ev")
	f.Add(craft(f, jwt.SigningMethodHS256, []byte(snap.signer.Public().(ed25519.PublicKey)), map[string]any{"kid": snap.active},
		jwt.MapClaims{"sub": "a"}), "ev")
	for _, s := range garbageSeeds() {
		f.Add(s, "ev")
	}
	now := t0().Add(10 * time.Second)
	f.Fuzz(func(t *testing.T, raw, event string) {
		got, err := iss.Verify(raw, event, now)
		checkVerdict(t, err)
		if err != nil {
			return
		}
		if got.Event != event || got.User == "" || got.Pos < 1 || got.ID == "" || !now.Before(got.ExpiresAt.Add(5*time.Second)) {
			t.Fatalf("accepted %q as %+v for event %q", raw, got, event)
		}
	})
}

func FuzzUserVerify(f *testing.F) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	pt, _ := key.PublicKey.Bytes()
	path := filepath.Join(f.TempDir(), "jwks.json")
	jwks := fmt.Sprintf(`{"keys":[{"kty":"EC","crv":"P-256","kid":"k","x":%q,"y":%q}]}`, b64(pt[1:33]), b64(pt[33:]))
	if err := os.WriteFile(path, []byte(jwks), 0o600); err != nil {
		f.Fatal(err)
	}
	u, err := NewUserVerifier(UserVerifierConfig{JWKSFile: path})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(craft(f, jwt.SigningMethodES256, key, map[string]any{"kid": "k"}, jwt.MapClaims{"sub": "u", "exp": t0().Add(time.Hour).Unix()}))
	f.Add(craft(f, jwt.SigningMethodES256, key, nil, jwt.MapClaims{"sub": 5, "exp": "x"}))
	for _, s := range garbageSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		user, err := u.Verify(raw, t0())
		checkVerdict(t, err)
		if err == nil && user == "" {
			t.Fatalf("accepted %q with an empty user", raw)
		}
	})
}

func FuzzVisitorVerify(f *testing.F) {
	v, err := NewVisitors(testSecret(1))
	if err != nil {
		f.Fatal(err)
	}
	_, cookie, err := v.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cookie)
	f.Add(cookie[:22] + "." + strings.Repeat("A", 22))
	f.Add(strings.Repeat("A", 45))
	for _, s := range garbageSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cookie string) {
		id, err := v.Verify(cookie)
		checkVerdict(t, err)
		if err != nil {
			return
		}
		if cookie != id+"."+v.mac(id) {
			t.Fatalf("accepted non-canonical cookie %q for id %q", cookie, id)
		}
	})
}

func FuzzParsePublicKeys(f *testing.F) {
	f.Add(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`)
	f.Add(`{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}`)
	f.Add(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYtk8C4QW2oZ3hJhiuK6V3rC1z1z5t3YhZ1t1nM"}`)
	f.Add("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA11qYAYtk8C4QW2oZ3hJhiuK6V3rC1z1z5t3YhZ1t1nM=\n-----END PUBLIC KEY-----\n")
	f.Fuzz(func(t *testing.T, data string) {
		keys, err := parsePublicKeys([]byte(data))
		if err == nil && len(keys) == 0 {
			t.Fatalf("no error and no keys for %q", data)
		}
		for _, k := range keys {
			if k.key == nil || (k.alg != "RS256" && k.alg != "ES256" && k.alg != "EdDSA") {
				t.Fatalf("key %+v from %q", k, data)
			}
		}
	})
}
