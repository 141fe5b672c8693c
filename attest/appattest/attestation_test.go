package appattest

import (
	"bytes"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"github.com/anteroom/anteroom/attest/attesttest"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

func TestGenuineAttestationPasses(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	v := newTestVerifier(t, ca, Config{})
	got, err := v.VerifyAttestation(testNow, attest(t, ca, d, attestation{}), d.ID, testChallenge)
	if err != nil {
		t.Fatalf("genuine attestation: %v", err)
	}
	if !bytes.Equal(got.Key.ID, d.ID) || !got.Key.PublicKey.Equal(&d.Key.PublicKey) {
		t.Errorf("attested key %x, want the device's %x", got.Key.ID, d.ID)
	}
	if got.Development {
		t.Error("a production attestation reported as development")
	}
	if string(got.Receipt) != "test receipt" {
		t.Errorf("receipt %q, want %q", got.Receipt, "test receipt")
	}
}

// TestAttestationRefused tries each way Apple's steps 1–9 must catch.
func TestAttestationRefused(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	other := newDevice(t)
	v := newTestVerifier(t, ca, Config{})
	tests := []struct {
		name      string
		object    []byte
		keyID     []byte
		challenge []byte
		now       time.Time
	}{
		{name: "wrong challenge", object: attest(t, ca, d, attestation{}), challenge: []byte("another challenge")},
		{name: "empty challenge for a real one", object: attest(t, ca, d, attestation{}), challenge: []byte{}},
		{name: "another app's attestation", object: attest(t, ca, d, attestation{AppID: "ABCDE12345.com.example.other"})},
		{name: "another team's app", object: attest(t, ca, d, attestation{AppID: "ZZZZZ99999.com.example.shop"})},
		{name: "key id of another key", object: attest(t, ca, d, attestation{}), keyID: other.ID},
		{name: "credential id not the key id", object: attest(t, ca, d, attestation{CredentialID: other.ID})},
		{name: "credential id and key id of another key", object: attest(t, ca, d, attestation{CredentialID: other.ID}), keyID: other.ID},
		{name: "nonce extension a bare OCTET STRING", object: attest(t, ca, d, attestation{NonceRaw: func(n []byte) []byte { return append([]byte{0x04, 0x20}, n...) }})},
		{name: "nonce extension with trailing bytes", object: attest(t, ca, d, attestation{NonceRaw: func(n []byte) []byte { return append(attesttest.NonceExtension(t, n).Value, 0) }})},
		{name: "counter not 0", object: attest(t, ca, d, attestation{Counter: 1})},
		{name: "development AAGUID without the option", object: attest(t, ca, d, attestation{AAGUID: aaguidDevelopment})},
		{name: "unknown AAGUID", object: attest(t, ca, d, attestation{AAGUID: make([]byte, 16)})},
		{name: "expired leaf", object: attest(t, ca, d, attestation{NotAfter: testNow.Add(-time.Minute)})},
		{name: "verified after the leaf expired", object: attest(t, ca, d, attestation{}), now: testNow.Add(73 * time.Hour)},
		{name: "verified before the leaf was issued", object: attest(t, ca, d, attestation{}), now: testNow.Add(-2 * time.Hour)},
		{name: "no nonce extension", object: attest(t, ca, d, attestation{NoNonce: true})},
		{name: "nonce of other data", object: attest(t, ca, d, attestation{Nonce: make([]byte, 32)})},
		{name: "chain from another root", object: attest(t, newTestCA(t), d, attestation{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keyID, challenge, now := tt.keyID, tt.challenge, tt.now
			if keyID == nil {
				keyID = d.ID
			}
			if challenge == nil {
				challenge = testChallenge
			}
			if now.IsZero() {
				now = testNow
			}
			_, err := v.VerifyAttestation(now, tt.object, keyID, challenge)
			if !errors.Is(err, ErrAttestation) {
				t.Errorf("got %v, want ErrAttestation", err)
			}
		})
	}
}

// TestCriticalNonceExtension: a certificate marking the nonce extension
// critical still verifies, since this package reads the extension.
func TestCriticalNonceExtension(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	v := newTestVerifier(t, ca, Config{})
	if _, err := v.VerifyAttestation(testNow, attest(t, ca, d, attestation{Critical: true}), d.ID, testChallenge); err != nil {
		t.Fatalf("critical nonce extension: %v", err)
	}
	_, err := v.VerifyAttestation(testNow, attest(t, ca, d, attestation{Critical: true}), d.ID, []byte("other"))
	if !errors.Is(err, ErrAttestation) {
		t.Fatalf("critical nonce extension, wrong challenge: %v, want ErrAttestation", err)
	}
}

func TestDevelopmentOnlyWhenAskedFor(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	dev := newTestVerifier(t, ca, Config{AllowDevelopment: true})
	got, err := dev.VerifyAttestation(testNow, attest(t, ca, d, attestation{AAGUID: aaguidDevelopment}), d.ID, testChallenge)
	if err != nil || !got.Development {
		t.Fatalf("development attestation with AllowDevelopment: development %v, %v; want true, nil", got.Development, err)
	}
	got, err = dev.VerifyAttestation(testNow, attest(t, ca, d, attestation{}), d.ID, testChallenge)
	if err != nil || got.Development {
		t.Fatalf("production attestation with AllowDevelopment: development %v, %v; want false, nil", got.Development, err)
	}
}

// TestTamperedAuthenticatorData changes signed-over fields of a genuine
// object after Apple issued its certificate: the nonce no longer matches.
func TestTamperedAuthenticatorData(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	v := newTestVerifier(t, ca, Config{})
	var obj map[string]any
	if err := cbor.Unmarshal(attest(t, ca, d, attestation{AppID: "ABCDE12345.com.example.other"}), &obj); err != nil {
		t.Fatal(err)
	}
	genuine := obj["authData"].([]byte)
	rp := sha256.Sum256([]byte(testAppID))
	tampers := map[string]func(ad []byte){
		"rpIdHash swapped for ours": func(ad []byte) { copy(ad, rp[:]) },
		"flag bit flipped":          func(ad []byte) { ad[32] ^= 0x04 },
		"COSE key byte changed":     func(ad []byte) { ad[len(ad)-1] ^= 1 },
	}
	for name, tamper := range tampers {
		t.Run(name, func(t *testing.T) {
			ad := bytes.Clone(genuine)
			tamper(ad)
			obj["authData"] = ad
			b, err := cbor.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.VerifyAttestation(testNow, b, d.ID, testChallenge)
			if !errors.Is(err, ErrAttestation) {
				t.Errorf("got %v, want ErrAttestation", err)
			}
		})
	}
}

// TestForgedChains builds chains an attacker could: its own leaf with the
// right nonce, the certificates in another order, a leaf the intermediate
// did not sign, a P-384 credential key.
func TestForgedChains(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	v := newTestVerifier(t, ca, Config{})
	var genuine map[string]any
	if err := cbor.Unmarshal(attest(t, ca, d, attestation{}), &genuine); err != nil {
		t.Fatal(err)
	}
	authData := genuine["authData"].([]byte)
	leafDER := genuine["attStmt"].(map[any]any)["x5c"].([]any)[0].([]byte)
	leaf := attesttest.ParseCert(t, leafDER)

	// The same leaf, signed by the attacker's own key posing as the intermediate.
	selfKey := attesttest.NewKey(t, elliptic.P384())
	fakeInter := &x509.Certificate{Subject: ca.Inter.Subject, NotBefore: ca.Inter.NotBefore, NotAfter: ca.Inter.NotAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	fakeInterDER := ca.Sign(t, fakeInter, nil, &selfKey.PublicKey, selfKey)
	reSigned := ca.Sign(t, &x509.Certificate{Subject: leaf.Subject, NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter,
		ExtraExtensions: []pkix.Extension{{Id: oidNonce, Value: extValue(t, leaf)}}}, attesttest.ParseCert(t, fakeInterDER), &d.Key.PublicKey, selfKey)

	// A credential certificate for a P-384 key, properly issued.
	p384 := attesttest.NewKey(t, elliptic.P384())
	p384DER := ca.Sign(t, &x509.Certificate{Subject: leaf.Subject, NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter,
		ExtraExtensions: []pkix.Extension{{Id: oidNonce, Value: extValue(t, leaf)}}}, ca.Inter, &p384.PublicKey, ca.InterKey)

	chains := map[string][][]byte{
		"leaf from a self-made intermediate":     {reSigned, fakeInterDER},
		"self-made intermediate beside the real": {reSigned, fakeInterDER, ca.InterDER},
		"intermediate first":                     {ca.InterDER, leafDER},
		"no intermediate":                        {leafDER},
		"the root's certificate as the leaf":     {ca.Root.Raw},
		"credential key on P-384":                {p384DER, ca.InterDER},
	}
	for name, x5c := range chains {
		t.Run(name, func(t *testing.T) {
			_, err := v.VerifyAttestation(testNow, attesttest.EncodeAttestation(t, "apple-appattest", x5c, authData), d.ID, testChallenge)
			if !errors.Is(err, ErrAttestation) {
				t.Errorf("got %v, want ErrAttestation", err)
			}
		})
	}
}

func extValue(t *testing.T, c *x509.Certificate) []byte {
	t.Helper()
	for _, e := range c.Extensions {
		if e.Id.Equal(oidNonce) {
			return e.Value
		}
	}
	t.Fatal("no nonce extension")
	return nil
}

// TestTestRootNotTrustedByDefault: a Verifier made without Roots trusts
// Apple's root only, so the tests' genuine attestation is refused.
func TestTestRootNotTrustedByDefault(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	v, err := New(Config{AppID: testAppID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.VerifyAttestation(testNow, attest(t, ca, d, attestation{}), d.ID, testChallenge)
	if !errors.Is(err, ErrAttestation) || !strings.Contains(err.Error(), "certificate chain") {
		t.Errorf("test-root attestation under the default roots: %v, want ErrAttestation for the chain", err)
	}
}

// TestMalformedAttestation: input that does not decode is ErrMalformed,
// never a panic nor another error.
func TestMalformedAttestation(t *testing.T) {
	ca, d := newTestCA(t), newDevice(t)
	v := newTestVerifier(t, ca, Config{})
	genuine := attest(t, ca, d, attestation{})
	var obj map[string]any
	if err := cbor.Unmarshal(genuine, &obj); err != nil {
		t.Fatal(err)
	}
	authData := obj["authData"].([]byte)
	x5c := [][]byte{}
	for _, c := range obj["attStmt"].(map[any]any)["x5c"].([]any) {
		x5c = append(x5c, c.([]byte))
	}
	enc := func(m map[string]any) []byte {
		b, err := cbor.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	longCredID := bytes.Clone(authData[:37+16])
	longCredID = append(longCredID, 0xff, 0xff, 1, 2, 3)
	noAT := bytes.Clone(authData)
	noAT[32] &^= 0x40

	tests := map[string][]byte{
		"nil":                         nil,
		"empty":                       {},
		"garbage":                     []byte("not cbor at all, really"),
		"a CBOR integer":              {0x01},
		"a CBOR array":                {0x82, 0x01, 0x02},
		"empty map":                   {0xa0},
		"trailing bytes":              append(bytes.Clone(genuine), 0x00),
		"two objects":                 append(bytes.Clone(genuine), genuine...),
		"another format":              attesttest.EncodeAttestation(t, "packed", x5c, authData),
		"no x5c":                      enc(map[string]any{"fmt": "apple-appattest", "attStmt": map[string]any{}, "authData": authData}),
		"x5c a string":                enc(map[string]any{"fmt": "apple-appattest", "attStmt": map[string]any{"x5c": "MIIB"}, "authData": authData}),
		"x5c of garbage":              attesttest.EncodeAttestation(t, "apple-appattest", [][]byte{[]byte("garbage")}, authData),
		"authData a string":           enc(map[string]any{"fmt": "apple-appattest", "attStmt": map[string]any{"x5c": x5c}, "authData": "x"}),
		"authData short":              attesttest.EncodeAttestation(t, "apple-appattest", x5c, authData[:36]),
		"authData no AT flag":         attesttest.EncodeAttestation(t, "apple-appattest", x5c, noAT),
		"authData cut in aaguid":      attesttest.EncodeAttestation(t, "apple-appattest", x5c, authData[:37+10]),
		"credential id past the end":  attesttest.EncodeAttestation(t, "apple-appattest", x5c, longCredID),
		"duplicate fmt key":           append([]byte{0xa4, 0x63, 'f', 'm', 't', 0x65, 'o', 't', 'h', 'e', 'r'}, genuine[1:]...),
		"duplicate fmt key and value": append(append([]byte{0xa4, 0x63, 'f', 'm', 't', 0x6f}, "apple-appattest"...), genuine[1:]...),
		"indefinite-length map":       append(append([]byte{0xbf}, genuine[1:]...), 0xff),
		"too large, by its receipt": enc(map[string]any{"fmt": "apple-appattest", "authData": authData,
			"attStmt": map[string]any{"x5c": x5c, "receipt": make([]byte, maxEvidenceLen)}}),
		"deep nesting":         bytes.Repeat([]byte{0x81}, 100),
		"huge declared length": {0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	}
	for name, object := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := v.VerifyAttestation(testNow, object, d.ID, testChallenge)
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("got %v, want ErrMalformed", err)
			}
		})
	}
	for n := range len(genuine) {
		if _, err := v.VerifyAttestation(testNow, genuine[:n], d.ID, testChallenge); !errors.Is(err, ErrMalformed) {
			t.Fatalf("first %d of %d bytes: got %v, want ErrMalformed", n, len(genuine), err)
		}
	}
}

func TestConfigRefused(t *testing.T) {
	for _, id := range []string{"", "com.example.shop", "ABCDE12345", "ABCDE12345.", "abcde12345.com.example.shop", "ABCDE1234.com.example.shop", "ABCDE12345X.com.example.shop", ".com.example"} {
		if _, err := New(Config{AppID: id}); err == nil {
			t.Errorf("New with App ID %q: no error", id)
		}
	}
}
