package appattest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/binary"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// This file builds App Attest evidence in Apple's documented format from
// a test root, an intermediate and a device key the tests make, as a
// phone and Apple's attestation service would.

const testAppID = "ABCDE12345.com.example.shop"

// testNow is the instant every test verifies at.
var testNow = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

// testCA is a root and an intermediate shaped like Apple's (P-384).
type testCA struct {
	root      *x509.Certificate
	rootKey   *ecdsa.PrivateKey
	inter     *x509.Certificate
	interKey  *ecdsa.PrivateKey
	interDER  []byte
	roots     *x509.CertPool
	serialSeq int64
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	ca := &testCA{}
	ca.rootKey = newKey(t, elliptic.P384())
	rootDER := ca.sign(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "Test App Attestation Root CA"},
		NotBefore:             testNow.Add(-365 * 24 * time.Hour),
		NotAfter:              testNow.Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, nil, &ca.rootKey.PublicKey, ca.rootKey)
	ca.root = parseCert(t, rootDER)
	ca.interKey = newKey(t, elliptic.P384())
	ca.interDER = ca.sign(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "Test App Attestation CA 1"},
		NotBefore:             testNow.Add(-30 * 24 * time.Hour),
		NotAfter:              testNow.Add(5 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, ca.root, &ca.interKey.PublicKey, ca.rootKey)
	ca.inter = parseCert(t, ca.interDER)
	ca.roots = x509.NewCertPool()
	ca.roots.AddCert(ca.root)
	return ca
}

// sign makes a certificate from tmpl for pub, issued by parent (itself
// when nil) with key.
func (ca *testCA) sign(t testing.TB, tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	ca.serialSeq++
	tmpl.SerialNumber = big.NewInt(ca.serialSeq)
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		t.Fatalf("create certificate: %v", err)
	}
	return der
}

// device is an app's App Attest key.
type device struct {
	key   *ecdsa.PrivateKey
	keyID []byte
}

func newDevice(t testing.TB) *device {
	t.Helper()
	key := newKey(t, elliptic.P256())
	pub, err := key.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	id := sha256.Sum256(pub)
	return &device{key: key, keyID: id[:]}
}

// attestation says how to build an attestation object; the zero value of
// each field means "as Apple would".
type attestation struct {
	appID        string // default testAppID
	aaguid       []byte // default production
	counter      uint32
	credentialID []byte // default the device's key id
	challenge    []byte // default testChallenge
	leafNotAfter time.Time
	nonce        []byte                    // the certificate's nonce; default the right one
	noNonce      bool                      // no nonce extension at all
	nonceRaw     func(nonce []byte) []byte // the nonce extension's value, instead of the ASN.1 around nonce
	critical     bool                      // the nonce extension marked critical
	fmt          string                    // default apple-appattest
}

var testChallenge = []byte("one-time challenge 7f3a")

// attest returns the attestation object for d, issued by ca's
// intermediate, and its authenticator data.
func (ca *testCA) attest(t testing.TB, d *device, a attestation) []byte {
	t.Helper()
	if a.appID == "" {
		a.appID = testAppID
	}
	if a.aaguid == nil {
		a.aaguid = aaguidProduction
	}
	if a.credentialID == nil {
		a.credentialID = d.keyID
	}
	if a.challenge == nil {
		a.challenge = testChallenge
	}
	if a.leafNotAfter.IsZero() {
		a.leafNotAfter = testNow.Add(72 * time.Hour)
	}
	if a.fmt == "" {
		a.fmt = "apple-appattest"
	}
	authData := attestedAuthData(t, a.appID, a.counter, a.aaguid, a.credentialID, &d.key.PublicKey)
	if a.nonce == nil {
		cdh := sha256.Sum256(a.challenge)
		n := sha256.Sum256(slices.Concat(authData, cdh[:]))
		a.nonce = n[:]
	}
	leaf := &x509.Certificate{
		Subject:   pkix.Name{CommonName: "test credential"},
		NotBefore: testNow.Add(-time.Hour),
		NotAfter:  a.leafNotAfter,
		KeyUsage:  x509.KeyUsageDigitalSignature,
	}
	if !a.noNonce {
		ext := nonceExt(t, a.nonce)
		if a.nonceRaw != nil {
			ext.Value = a.nonceRaw(a.nonce)
		}
		ext.Critical = a.critical
		leaf.ExtraExtensions = []pkix.Extension{ext}
	}
	leafDER := ca.sign(t, leaf, ca.inter, &d.key.PublicKey, ca.interKey)
	return encodeAttestation(t, a.fmt, [][]byte{leafDER, ca.interDER}, authData)
}

func encodeAttestation(t testing.TB, format string, x5c [][]byte, authData []byte) []byte {
	t.Helper()
	b, err := cbor.Marshal(map[string]any{
		"fmt":      format,
		"attStmt":  map[string]any{"x5c": x5c, "receipt": []byte("test receipt")},
		"authData": authData,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nonceExt is the credential certificate's nonce extension:
// SEQUENCE { [1] EXPLICIT OCTET STRING nonce }.
func nonceExt(t testing.TB, nonce []byte) pkix.Extension {
	t.Helper()
	v, err := asn1.Marshal(nonceExtension{Nonce: nonce})
	if err != nil {
		t.Fatal(err)
	}
	return pkix.Extension{Id: oidNonce, Value: v}
}

// attestedAuthData is authenticator data with attested credential data
// and the key as a COSE EC2 key, as an attestation carries.
func attestedAuthData(t testing.TB, appID string, counter uint32, aaguid, credentialID []byte, pub *ecdsa.PublicKey) []byte {
	t.Helper()
	point, err := pub.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	cose, err := cbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: point[1:33], -3: point[33:]})
	if err != nil {
		t.Fatal(err)
	}
	ad := authData(appID, 0x40|0x01, counter)
	ad = append(ad, aaguid...)
	ad = binary.BigEndian.AppendUint16(ad, uint16(len(credentialID)))
	ad = append(ad, credentialID...)
	return append(ad, cose...)
}

// authData is the fixed part of authenticator data.
func authData(appID string, flags byte, counter uint32) []byte {
	rp := sha256.Sum256([]byte(appID))
	ad := append(rp[:], flags)
	return binary.BigEndian.AppendUint32(ad, counter)
}

// assert returns d's assertion of clientData for appID with counter.
func (d *device) assert(t testing.TB, appID string, counter uint32, clientData []byte) []byte {
	t.Helper()
	ad := authData(appID, 0x01, counter)
	return encodeAssertion(t, d.sign(t, ad, clientData), ad)
}

// sign returns d's signature of authenticator data ad and clientData.
func (d *device) sign(t testing.TB, ad, clientData []byte) []byte {
	t.Helper()
	cdh := sha256.Sum256(clientData)
	nonce := sha256.Sum256(slices.Concat(ad, cdh[:]))
	sig, err := ecdsa.SignASN1(rand.Reader, d.key, nonce[:])
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func encodeAssertion(t testing.TB, sig, authData []byte) []byte {
	t.Helper()
	b, err := cbor.Marshal(map[string][]byte{"signature": sig, "authenticatorData": authData})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newKey(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func parseCert(t testing.TB, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newTestVerifier returns a verifier trusting only ca's root.
func newTestVerifier(t testing.TB, ca *testCA, cfg Config) *Verifier {
	t.Helper()
	if cfg.AppID == "" {
		cfg.AppID = testAppID
	}
	cfg.Roots = ca.roots
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
