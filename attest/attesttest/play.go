package attesttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Play is an operator's Play Integrity keys, as the Play Console gives
// them, and the signer Google holds.
type Play struct {
	// DecryptionKey and VerificationKey are the keys in the Play
	// Console's form (base64).
	DecryptionKey, VerificationKey string
	aes                            []byte
	signer                         *ecdsa.PrivateKey
}

// NewPlay makes a Play.
func NewPlay(t testing.TB) *Play {
	t.Helper()
	p := &Play{aes: make([]byte, 32), signer: NewKey(t, elliptic.P256())}
	rand.Read(p.aes)
	der, err := x509.MarshalPKIXPublicKey(&p.signer.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	p.DecryptionKey = base64.StdEncoding.EncodeToString(p.aes)
	p.VerificationKey = base64.StdEncoding.EncodeToString(der)
	return p
}

// Verdict says what a token attests; zero fields are a genuine app on a
// genuine device, issued now.
type Verdict struct {
	PackageName string
	RequestHash string
	Issued      time.Time
	// App is the app verdict. Default: PLAY_RECOGNIZED
	App string
	// Device is the device labels. Default: [MEETS_DEVICE_INTEGRITY]
	Device []string
}

// Token returns the integrity token Google Play would give for v: the
// verdict JSON signed ES256 and encrypted A256KW/A256GCM.
func (p *Play) Token(t testing.TB, v Verdict) string {
	t.Helper()
	if v.Issued.IsZero() {
		v.Issued = time.Now()
	}
	if v.App == "" {
		v.App = "PLAY_RECOGNIZED"
	}
	if v.Device == nil {
		v.Device = []string{"MEETS_DEVICE_INTEGRITY"}
	}
	payload, err := json.Marshal(map[string]any{
		"requestDetails": map[string]any{
			"requestPackageName": v.PackageName, "requestHash": v.RequestHash,
			"timestampMillis": strconv.FormatInt(v.Issued.UnixMilli(), 10),
		},
		"appIntegrity":    map[string]any{"appRecognitionVerdict": v.App, "packageName": v.PackageName, "versionCode": "42"},
		"deviceIntegrity": map[string]any{"deviceRecognitionVerdict": v.Device},
		"accountDetails":  map[string]any{"appLicensingVerdict": "LICENSED"},
	})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: p.signer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := jose.NewEncrypter(jose.A256GCM, jose.Recipient{Algorithm: jose.A256KW, Key: p.aes}, nil)
	if err != nil {
		t.Fatal(err)
	}
	jwe, err := enc.Encrypt([]byte(inner))
	if err != nil {
		t.Fatal(err)
	}
	out, err := jwe.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
