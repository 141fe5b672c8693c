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
// authorities (P-384). Its fields are open to tests that forge chains.
type AppleCA struct {
	Root     *x509.Certificate
	RootKey  *ecdsa.PrivateKey
	Inter    *x509.Certificate
	InterKey *ecdsa.PrivateKey
	InterDER []byte
	now      time.Time // the instant its certificates are made around
	serial   int64
}

// NewAppleCA makes an AppleCA around the current time.
func NewAppleCA(t testing.TB) *AppleCA { return NewAppleCAAt(t, time.Now()) }

// NewAppleCAAt makes an AppleCA around now: the root valid from a year
// before to ten years after, the intermediate from 30 days before to five
// years after, and its credential certificates (by default) from an hour
// before to 72 hours after.
func NewAppleCAAt(t testing.TB, now time.Time) *AppleCA {
	t.Helper()
	ca := &AppleCA{now: now}
	ca.RootKey = NewKey(t, elliptic.P384())
	ca.Root = ParseCert(t, ca.Sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "Test App Attestation Root CA"}, NotBefore: now.Add(-365 * 24 * time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, nil, &ca.RootKey.PublicKey, ca.RootKey))
	ca.InterKey = NewKey(t, elliptic.P384())
	ca.InterDER = ca.Sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "Test App Attestation CA 1"}, NotBefore: now.Add(-30 * 24 * time.Hour), NotAfter: now.Add(5 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, ca.Root, &ca.InterKey.PublicKey, ca.RootKey)
	ca.Inter = ParseCert(t, ca.InterDER)
	return ca
}

// Roots is a pool holding only ca's root.
func (ca *AppleCA) Roots() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Root)
	return p
}

// Sign makes a certificate from tmpl (its serial number set) for pub,
// issued by parent (itself when nil) with key.
func (ca *AppleCA) Sign(t testing.TB, tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, key *ecdsa.PrivateKey) []byte {
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

// Device is an app's App Attest key on one phone: ID is the key
// identifier, the SHA-256 of the public key.
type Device struct {
	Key *ecdsa.PrivateKey
	ID  []byte
}

// NewDevice makes a Device.
func NewDevice(t testing.TB) *Device {
	t.Helper()
	key := NewKey(t, elliptic.P256())
	pub, err := key.PublicKey.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	id := sha256.Sum256(pub)
	return &Device{Key: key, ID: id[:]}
}

// KeyID is the key identifier, base64 as the app reports it.
func (d *Device) KeyID() string { return base64.StdEncoding.EncodeToString(d.ID) }

// Attestation says how AttestWith builds an attestation object; the zero
// value of each field but AppID and Challenge means "as Apple would".
type Attestation struct {
	AppID        string
	Challenge    []byte
	AAGUID       []byte // default production
	Counter      uint32
	CredentialID []byte    // default the device's key id
	NotAfter     time.Time // the credential certificate's; default 72 hours after the CA's instant
	Nonce        []byte    // the certificate's nonce; default the right one
	NoNonce      bool      // no nonce extension at all
	// NonceRaw gives the nonce extension's value instead of the ASN.1
	// around the nonce.
	NonceRaw func(nonce []byte) []byte
	Critical bool   // the nonce extension marked critical
	Format   string // default apple-appattest
}

// Attest returns the attestation object Apple would give d's key for
// appID (production environment) and challenge, issued by ca.
func (ca *AppleCA) Attest(t testing.TB, d *Device, appID, challenge string) []byte {
	t.Helper()
	return ca.AttestWith(t, d, Attestation{AppID: appID, Challenge: []byte(challenge)})
}

// AttestWith returns the attestation object a describes for d, issued by
// ca's intermediate.
func (ca *AppleCA) AttestWith(t testing.TB, d *Device, a Attestation) []byte {
	t.Helper()
	if a.AAGUID == nil {
		a.AAGUID = []byte("appattest\x00\x00\x00\x00\x00\x00\x00")
	}
	if a.CredentialID == nil {
		a.CredentialID = d.ID
	}
	if a.NotAfter.IsZero() {
		a.NotAfter = ca.now.Add(72 * time.Hour)
	}
	if a.Format == "" {
		a.Format = "apple-appattest"
	}
	ad := AttestedAuthData(t, a.AppID, a.Counter, a.AAGUID, a.CredentialID, &d.Key.PublicKey)
	if a.Nonce == nil {
		cdh := sha256.Sum256(a.Challenge)
		n := sha256.Sum256(slices.Concat(ad, cdh[:]))
		a.Nonce = n[:]
	}
	leaf := &x509.Certificate{
		Subject: pkix.Name{CommonName: "test credential"}, NotBefore: ca.now.Add(-time.Hour), NotAfter: a.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if !a.NoNonce {
		ext := NonceExtension(t, a.Nonce)
		if a.NonceRaw != nil {
			ext.Value = a.NonceRaw(a.Nonce)
		}
		ext.Critical = a.Critical
		leaf.ExtraExtensions = []pkix.Extension{ext}
	}
	leafDER := ca.Sign(t, leaf, ca.Inter, &d.Key.PublicKey, ca.InterKey)
	return EncodeAttestation(t, a.Format, [][]byte{leafDER, ca.InterDER}, ad)
}

// EncodeAttestation is an attestation object of format with the chain x5c
// and authenticator data authData.
func EncodeAttestation(t testing.TB, format string, x5c [][]byte, authData []byte) []byte {
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

// NonceExtension is the credential certificate's nonce extension:
// SEQUENCE { [1] EXPLICIT OCTET STRING nonce }.
func NonceExtension(t testing.TB, nonce []byte) pkix.Extension {
	t.Helper()
	v, err := asn1.Marshal(struct {
		Nonce []byte `asn1:"tag:1,explicit"`
	}{nonce})
	if err != nil {
		t.Fatal(err)
	}
	return pkix.Extension{Id: asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 8, 2}, Value: v}
}

// AttestedAuthData is authenticator data with attested credential data
// and the key as a COSE EC2 key, as an attestation carries.
func AttestedAuthData(t testing.TB, appID string, counter uint32, aaguid, credentialID []byte, pub *ecdsa.PublicKey) []byte {
	t.Helper()
	point, err := pub.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	cose, err := cbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: point[1:33], -3: point[33:]})
	if err != nil {
		t.Fatal(err)
	}
	ad := AuthData(appID, 0x40|0x01, counter)
	ad = append(ad, aaguid...)
	ad = binary.BigEndian.AppendUint16(ad, uint16(len(credentialID)))
	ad = append(ad, credentialID...)
	return append(ad, cose...)
}

// AuthData is the fixed part of authenticator data: the app id's hash,
// flags and counter.
func AuthData(appID string, flags byte, counter uint32) []byte {
	rp := sha256.Sum256([]byte(appID))
	return binary.BigEndian.AppendUint32(append(rp[:], flags), counter)
}

// Assert returns d's assertion of clientData for appID with counter, in
// base64 as a request header carries it.
func (d *Device) Assert(t testing.TB, appID string, counter uint32, clientData []byte) string {
	t.Helper()
	return base64.StdEncoding.EncodeToString(d.Assertion(t, appID, counter, clientData))
}

// Assertion returns d's assertion of clientData for appID with counter.
func (d *Device) Assertion(t testing.TB, appID string, counter uint32, clientData []byte) []byte {
	t.Helper()
	ad := AuthData(appID, 0x01, counter)
	return EncodeAssertion(t, d.Sign(t, ad, clientData), ad)
}

// Sign returns d's signature of authenticator data ad and clientData.
func (d *Device) Sign(t testing.TB, ad, clientData []byte) []byte {
	t.Helper()
	cdh := sha256.Sum256(clientData)
	nonce := sha256.Sum256(slices.Concat(ad, cdh[:]))
	sig, err := ecdsa.SignASN1(rand.Reader, d.Key, nonce[:])
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// EncodeAssertion is an assertion of signature sig over authData.
func EncodeAssertion(t testing.TB, sig, authData []byte) []byte {
	t.Helper()
	b, err := cbor.Marshal(map[string][]byte{"signature": sig, "authenticatorData": authData})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// NewKey makes an ECDSA key on c.
func NewKey(t testing.TB, c elliptic.Curve) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// ParseCert parses one DER certificate.
func ParseCert(t testing.TB, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
