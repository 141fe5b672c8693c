package tokens

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

func BenchmarkTicketSign(b *testing.B) {
	tickets, _ := NewTickets(testSecret(1))
	tk := Ticket{Event: "spring-drop-2026", User: "user-0123456789", Seq: 1234567, IssuedAt: t0()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tickets.Sign(tk); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTicketVerify(b *testing.B) {
	tickets, _ := NewTickets(testSecret(1))
	raw, _ := tickets.Sign(Ticket{Event: "spring-drop-2026", User: "user-0123456789", Seq: 1234567, IssuedAt: t0()})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tickets.Verify(raw, "spring-drop-2026"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(raw)), "bytes/token")
}

// es256Issuer mirrors Issuer with an ES256 (P-256) key instead of EdDSA. It
// exists only to measure the alternative; the product signs with EdDSA.
type es256Issuer struct {
	key *ecdsa.PrivateKey
	kid string
	cfg *Issuer // issuer, audience and leeway
}

func newES256Issuer(b *testing.B) *es256Issuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	keys, err := OpenKeyDir(filepath.Join(b.TempDir(), "keys"))
	if err != nil {
		b.Fatal(err)
	}
	return &es256Issuer{key: key, kid: "es256-bench", cfg: NewIssuer(keys, IssuerConfig{})}
}

func (e *es256Issuer) Issue(event, user string, pos int64, ttl time.Duration, now time.Time) (string, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	iat := time.Unix(now.Unix(), 0)
	t := jwt.NewWithClaims(jwt.SigningMethodES256, admissionClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: e.cfg.issuer, Subject: user, Audience: jwt.ClaimStrings{e.cfg.audience},
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)), NotBefore: jwt.NewNumericDate(iat),
			IssuedAt: jwt.NewNumericDate(iat), ID: b64(id[:]),
		},
		Event: event, Pos: &pos,
	})
	t.Header["kid"] = e.kid
	return t.SignedString(e.key)
}

func (e *es256Issuer) Verify(raw string, now time.Time) error {
	var c admissionClaims
	_, err := jwt.NewParser(
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithStrictDecoding(),
		jwt.WithIssuer(e.cfg.issuer), jwt.WithAudience(e.cfg.audience),
		jwt.WithExpirationRequired(), jwt.WithNotBeforeRequired(), jwt.WithIssuedAt(),
		jwt.WithLeeway(e.cfg.leeway), jwt.WithTimeFunc(func() time.Time { return now }),
	).ParseWithClaims(raw, &c, func(t *jwt.Token) (any, error) { return &e.key.PublicKey, nil })
	return err
}

func BenchmarkAdmissionIssue(b *testing.B) {
	b.Run("EdDSA", func(b *testing.B) {
		iss, _ := newTestIssuer(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := iss.Issue("spring-drop-2026", "user-0123456789", 1234567, 5*time.Minute, t0()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ES256", func(b *testing.B) {
		iss := newES256Issuer(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := iss.Issue("spring-drop-2026", "user-0123456789", 1234567, 5*time.Minute, t0()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkAdmissionVerify(b *testing.B) {
	b.Run("EdDSA", func(b *testing.B) {
		iss, _ := newTestIssuer(b)
		raw, _, _ := iss.Issue("spring-drop-2026", "user-0123456789", 1234567, 5*time.Minute, t0())
		b.ReportAllocs()
		for b.Loop() {
			if _, err := iss.Verify(raw, "spring-drop-2026", t0()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(raw)), "bytes/token")
	})
	b.Run("ES256", func(b *testing.B) {
		iss := newES256Issuer(b)
		raw, _ := iss.Issue("spring-drop-2026", "user-0123456789", 1234567, 5*time.Minute, t0())
		b.ReportAllocs()
		for b.Loop() {
			if err := iss.Verify(raw, t0()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(raw)), "bytes/token")
	})
}

func BenchmarkVisitorVerify(b *testing.B) {
	v, _ := NewVisitors(testSecret(1))
	_, cookie, _ := v.New()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(cookie); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUserVerify(b *testing.B) {
	shop := newShopKeys(b)
	path := filepath.Join(b.TempDir(), "jwks.json")
	pt, _ := shop.ec.PublicKey.Bytes()
	jwks := `{"keys":[{"kty":"RSA","kid":"r","n":"` + b64(shop.rsa.N.Bytes()) + `","e":"AQAB"},` +
		`{"kty":"EC","crv":"P-256","kid":"e","x":"` + b64(pt[1:33]) + `","y":"` + b64(pt[33:]) + `"},` +
		`{"kty":"OKP","crv":"Ed25519","kid":"d","x":"` + b64(shop.ed.Public().(ed25519.PublicKey)) + `"}]}`
	if err := os.WriteFile(path, []byte(jwks), 0o600); err != nil {
		b.Fatal(err)
	}
	u, err := NewUserVerifier(UserVerifierConfig{JWKSFile: path})
	if err != nil {
		b.Fatal(err)
	}
	claims := jwt.MapClaims{"sub": "user-42", "exp": t0().Add(time.Hour).Unix(), "iat": t0().Unix()}
	for _, tc := range []struct {
		name   string
		method jwt.SigningMethod
		key    any
		kid    string
	}{
		{"RS256", jwt.SigningMethodRS256, shop.rsa, "r"},
		{"ES256", jwt.SigningMethodES256, shop.ec, "e"},
		{"EdDSA", jwt.SigningMethodEdDSA, shop.ed, "d"},
	} {
		raw := craft(b, tc.method, tc.key, map[string]any{"kid": tc.kid}, claims)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := u.Verify(raw, t0()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAdmissionVerifyPaths compares, in one run, Verify with the
// plain golang-jwt + crypto/ed25519 verification it replaced
// (verifyReference), and the bare signature checks of each.
//
//	go test -run '^$' -bench AdmissionVerifyPaths -count 6 ./tokens/
func BenchmarkAdmissionVerifyPaths(b *testing.B) {
	iss, keys := newTestIssuer(b)
	raw, _, _ := iss.Issue("spring-drop-2026", "user-0123456789", 1234567, 5*time.Minute, t0())
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := iss.verifyReference(raw, "spring-drop-2026", t0()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := iss.Verify(raw, "spring-drop-2026", t0()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := iss.verifyReference(raw, "spring-drop-2026", t0()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("Verify-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := iss.Verify(raw, "spring-drop-2026", t0()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	dot := strings.LastIndexByte(raw, '.')
	msg, sig := []byte(raw[:dot]), mustB64(b, raw[dot+1:])
	snap := keys.snap.Load()
	b.Run("signature/crypto-ed25519", func(b *testing.B) {
		for b.Loop() {
			if !ed25519.Verify(snap.pubs[snap.active], msg, sig) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("signature/voi-expanded", func(b *testing.B) {
		for b.Loop() {
			if !voi.VerifyExpandedWithOptions(snap.verify[snap.active].pub, msg, sig, stdlibVerify) {
				b.Fatal("refused")
			}
		}
	})
}

func mustB64(b *testing.B, s string) []byte {
	out, err := unb64(s)
	if err != nil {
		b.Fatal(err)
	}
	return out
}
