package attesttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/binary"
	"math/big"
	"slices"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// AppleCA is a root and an intermediate shaped like Apple's App Attest
// authorities (P-384), valid a year either side of the instant it is made.
type AppleCA struct {
	root     *x509.Certificate
	interKey *ecdsa.PrivateKey
	inter    *x509.Certificate
	interDER []byte
	serial   int64
}

// NewAppleCA makes an AppleCA.
func NewAppleCA(t testing.TB) *AppleCA {
	t.Helper()
	now := time.Now()
	ca := &AppleCA{}
	rootKey := newKey(t, elliptic.P384())
	ca.root = parse(t, ca.sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "Test App Attestation Root CA"}, NotBefore: now.Add(-365 * 24 * time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}, nil, &rootKey.PublicKey, rootKey))
	ca.interKey = newKey(t, elliptic.P384())
	ca.interDER = ca.sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "Test App Attestation CA 1"}, NotBefore: now.Add(-365 * 24 * time.Hour), NotAfter: now.Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}, ca.root, &ca.interKey.PublicKey, rootKey)
	ca.inter = parse(t, ca.interDER)
	return ca
}

// Roots is a pool holding only ca's root.
func (ca *AppleCA) Roots() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.root)
	return p
}

func (ca *AppleCA) sign(t testing.TB, tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	ca.serial++
	tmpl.SerialNumber = big.NewInt(ca.serial)
	if parent == nil {
		parent = tmpl
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		t.Fatalf("create certificate: %v", err)
	}
	return der
}

// Device is an app's App Attest key on one phone.
type Device struct {
	key *ecdsa.PrivateKey
	id  []byte
}

// NewDevice makes a Device.
func NewDevice(t testing.TB) *Device {
	t.Helper()
	key := newKey(t, elliptic.P256())
	pub, err := key.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	id := sha256.Sum256(pub)
	return &Device{key: key, id: id[:]}
}

// KeyID is the key identifier (SHA-256 of the public key), base64 as
// the app reports it.
func (d *Device) KeyID() string { return base64.StdEncoding.EncodeToString(d.id) }

// Attest returns the attestation object Apple would give d's key for
// appID (production environment) and challenge, issued by ca.
func (ca *AppleCA) Attest(t testing.TB, d *Device, appID, challenge string) []byte {
	t.Helper()
	point, err := d.key.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	cose, err := cbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: point[1:33], -3: point[33:]})
	if err != nil {
		t.Fatal(err)
	}
	ad := authData(appID, 0x40|0x01, 0)
	ad = append(ad, "appattest\x00\x00\x00\x00\x00\x00\x00"...)
	ad = binary.BigEndian.AppendUint16(ad, uint16(len(d.id)))
	ad = append(ad, d.id...)
	ad = append(ad, cose...)
	cdh := sha256.Sum256([]byte(challenge))
	nonce := sha256.Sum256(slices.Concat(ad, cdh[:]))
	ext, err := asn1.Marshal(struct {
		Nonce []byte `asn1:"tag:1,explicit"`
	}{nonce[:]})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	leaf := ca.sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "test credential"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(72 * time.Hour),
		KeyUsage:        x509.KeyUsageDigitalSignature,
		ExtraExtensions: []pkix.Extension{{Id: asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 8, 2}, Value: ext}},
	}, ca.inter, &d.key.PublicKey, ca.interKey)
	b, err := cbor.Marshal(map[string]any{
		"fmt":      "apple-appattest",
		"attStmt":  map[string]any{"x5c": [][]byte{leaf, ca.interDER}, "receipt": []byte("test receipt")},
		"authData": ad,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Assert returns d's assertion of clientData for appID with counter, in
// base64 as a request header carries it.
func (d *Device) Assert(t testing.TB, appID string, counter uint32, clientData []byte) string {
	t.Helper()
	ad := authData(appID, 0x01, counter)
	cdh := sha256.Sum256(clientData)
	nonce := sha256.Sum256(slices.Concat(ad, cdh[:]))
	sig, err := ecdsa.SignASN1(rand.Reader, d.key, nonce[:])
	if err != nil {
		t.Fatal(err)
	}
	b, err := cbor.Marshal(map[string][]byte{"signature": sig, "authenticatorData": ad})
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// authData is the fixed part of authenticator data.
func authData(appID string, flags byte, counter uint32) []byte {
	rp := sha256.Sum256([]byte(appID))
	return binary.BigEndian.AppendUint32(append(rp[:], flags), counter)
}

func newKey(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func parse(t testing.TB, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
