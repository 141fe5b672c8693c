package playintegrity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// What the tests' app is, and the request it made.
const (
	testPackage     = "com.example.shop"
	testRequestHash = "2mWq1bqd9cJfPjYUqCEa3NpAT6hxLBOx6Ynp3LmaQWg"
	testNonce       = "aGVsbG93b3JsZGhvd2FyZXlvdQ=="
)

// testCert is the SHA-256 of the app's signing certificate, as Google
// writes it (base64url, no padding).
var testCert = sha256.Sum256([]byte("the app's signing certificate"))

// fixture is an operator's keys as the Play Console would give them, the
// Verifier built from them and the instant the tests verify at.
type fixture struct {
	aesKey []byte
	signer *ecdsa.PrivateKey
	v      *Verifier
	now    time.Time
	cfg    Config
	aesB64 string
	pubB64 string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{aesKey: make([]byte, 32), now: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	rand.Read(f.aesKey)
	var err error
	if f.signer, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&f.signer.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	f.aesB64 = base64.StdEncoding.EncodeToString(f.aesKey)
	f.pubB64 = base64.StdEncoding.EncodeToString(der)
	f.cfg = Config{DecryptionKey: f.aesB64, VerificationKey: f.pubB64, PackageName: testPackage}
	if f.v, err = New(f.cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// verdict is a genuine verdict in the documented format (int64 fields as
// decimal strings, as Google sends them, and a field this package does
// not read), issued age before f.now, for a standard request.
func (f *fixture) verdict(age time.Duration) map[string]any {
	return map[string]any{
		"requestDetails": map[string]any{
			"requestPackageName": testPackage,
			"requestHash":        testRequestHash,
			"timestampMillis":    strconv.FormatInt(f.now.Add(-age).UnixMilli(), 10),
		},
		"appIntegrity": map[string]any{
			"appRecognitionVerdict":   "PLAY_RECOGNIZED",
			"packageName":             testPackage,
			"certificateSha256Digest": []string{base64.RawURLEncoding.EncodeToString(testCert[:])},
			"versionCode":             "42",
		},
		"deviceIntegrity": map[string]any{
			"deviceRecognitionVerdict": []string{"MEETS_DEVICE_INTEGRITY"},
		},
		"accountDetails": map[string]any{
			"appLicensingVerdict": "LICENSED",
		},
		"environmentDetails": map[string]any{
			"appAccessRiskVerdict": map[string]any{"appsDetected": []string{"KNOWN_INSTALLED"}},
		},
	}
}

// token is a genuine token: the verdict, edited by edit, signed ES256 by
// the operator's signer and encrypted A256KW/A256GCM under its AES key.
func (f *fixture) token(t testing.TB, edit func(v map[string]any)) string {
	t.Helper()
	v := f.verdict(5 * time.Second)
	if edit != nil {
		edit(v)
	}
	return f.seal(t, sign(t, jose.ES256, f.signer, mustJSON(t, v)))
}

// seal encrypts plaintext as Google does.
func (f *fixture) seal(t testing.TB, plaintext string) string {
	t.Helper()
	return encrypt(t, jose.A256KW, jose.A256GCM, f.aesKey, []byte(plaintext))
}

func sign(t testing.TB, alg jose.SignatureAlgorithm, key any, payload []byte) string {
	t.Helper()
	return signWith(t, alg, key, payload, nil)
}

func signWith(t testing.TB, alg jose.SignatureAlgorithm, key any, payload []byte, opts *jose.SignerOptions) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func encrypt(t testing.TB, alg jose.KeyAlgorithm, enc jose.ContentEncryption, key any, plaintext []byte) string {
	t.Helper()
	return encryptWith(t, alg, enc, key, plaintext, nil)
}

func encryptWith(t testing.TB, alg jose.KeyAlgorithm, enc jose.ContentEncryption, key any, plaintext []byte, opts *jose.EncrypterOptions) string {
	t.Helper()
	e, err := jose.NewEncrypter(enc, jose.Recipient{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jwe, err := e.Encrypt(plaintext)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jwe.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// b64 is base64url without padding, JOSE's encoding.
func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// section returns v[name] as a map, for edits.
func section(v map[string]any, name string) map[string]any { return v[name].(map[string]any) }

// standard is the Expect of the fixture's standard request, classic of a
// classic one.
var (
	standard = Expect{RequestHash: testRequestHash}
	classic  = Expect{Nonce: testNonce}
)
