package appattest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"testing"
	"time"
)

// TestAppleRootIsTheRealOne checks the embedded PEM is what Apple
// publishes: a self-signed P-384 CA named "Apple App Attestation Root CA"
// (a copy with one wrong byte fails its own signature), valid 2020–2045,
// matching the pin.
func TestAppleRootIsTheRealOne(t *testing.T) {
	root, err := AppleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := root.CheckSignatureFrom(root); err != nil {
		t.Errorf("the root's self-signature: %v", err)
	}
	pub, ok := root.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P384() {
		t.Errorf("root key %T, want ECDSA P-384", root.PublicKey)
	}
	if root.SignatureAlgorithm != x509.ECDSAWithSHA384 {
		t.Errorf("signature algorithm %v, want ECDSA-SHA384", root.SignatureAlgorithm)
	}
	if !root.IsCA || !root.BasicConstraintsValid {
		t.Error("root is not a CA")
	}
	if got, want := root.Subject.String(), "CN=Apple App Attestation Root CA,O=Apple Inc.,ST=California"; got != want {
		t.Errorf("subject %q, want %q", got, want)
	}
	if !bytes.Equal(root.RawSubject, root.RawIssuer) {
		t.Error("issuer is not the subject")
	}
	if want := time.Date(2045, 3, 15, 0, 0, 0, 0, time.UTC); !root.NotAfter.Equal(want) {
		t.Errorf("not after %v, want %v", root.NotAfter, want)
	}
}

// TestAppleRootPinned: the embedded file changed by one character is refused.
func TestAppleRootPinned(t *testing.T) {
	saved := appleRootPEM
	t.Cleanup(func() { appleRootPEM = saved })

	// "Apple Inc." -> "Apple Apps" in the subject, base64 of the DER.
	appleRootPEM = bytes.Replace(bytes.Clone(saved), []byte("QXBwbGUgSW5jLjET"), []byte("QXBwbGUgQXBwcy4x"), 1)
	if bytes.Equal(appleRootPEM, saved) {
		t.Fatal("the tamper changed nothing")
	}
	if _, err := AppleRoot(); err == nil {
		t.Error("a tampered root was accepted")
	}
	if _, err := New(Config{AppID: testAppID}); err == nil {
		t.Error("New accepted a tampered root")
	}
	appleRootPEM = append(bytes.Clone(saved), saved...)
	if _, err := AppleRoot(); err == nil {
		t.Error("a second certificate after the root was accepted")
	}
}
