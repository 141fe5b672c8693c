package appattest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"slices"
	"time"
)

// Attestation is what a verified attestation object establishes.
type Attestation struct {
	// Key is the attested key. Store it with counter 0: its first
	// assertion must count higher.
	Key Key

	// Development is true for a key attested in Apple's development
	// environment (only accepted with [Config.AllowDevelopment]).
	Development bool

	// Receipt is Apple's receipt from the attestation statement, which a
	// server may send to Apple for the device's fraud risk metric. It is
	// not verified here.
	Receipt []byte
}

// attestationObject is the CBOR map an app's attestKey call returns.
type attestationObject struct {
	Fmt      string               `cbor:"fmt"`
	AttStmt  attestationStatement `cbor:"attStmt"`
	AuthData []byte               `cbor:"authData"`
}

type attestationStatement struct {
	X5c     [][]byte `cbor:"x5c"`
	Receipt []byte   `cbor:"receipt"`
}

// oidNonce is the credential certificate's extension holding the nonce.
var oidNonce = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 8, 2}

// nonceExtension is the extension's value: SEQUENCE { [1] OCTET STRING }.
type nonceExtension struct {
	Nonce []byte `asn1:"tag:1,explicit"`
}

// The AAGUIDs of the two App Attest environments (16 bytes each).
var (
	aaguidProduction  = []byte("appattest\x00\x00\x00\x00\x00\x00\x00")
	aaguidDevelopment = []byte("appattestdevelop")
)

// VerifyAttestation checks an attestation object for the key the app
// identifies as keyID (its keyId, base64-decoded) made for the one-time
// challenge the server gave it, following Apple's "Verify the
// attestation" steps 1–9 at instant now, and returns the attested key.
//
// The challenge must be single use and the caller's to spend: this
// function cannot tell a challenge already used. It returns an error
// wrapping [ErrMalformed] when object cannot be decoded and
// [ErrAttestation] when a check fails.
func (v *Verifier) VerifyAttestation(now time.Time, object, keyID, challenge []byte) (Attestation, error) {
	if len(object) > maxEvidenceLen {
		return Attestation{}, fmt.Errorf("%w: attestation object of %d bytes", ErrMalformed, len(object))
	}
	var obj attestationObject
	if err := v.decode.Unmarshal(object, &obj); err != nil {
		return Attestation{}, fmt.Errorf("%w: attestation object: %v", ErrMalformed, err)
	}
	if obj.Fmt != "apple-appattest" {
		return Attestation{}, fmt.Errorf("%w: attestation format %q, want apple-appattest", ErrMalformed, obj.Fmt)
	}
	if len(obj.AttStmt.X5c) == 0 {
		return Attestation{}, fmt.Errorf("%w: attestation statement has no x5c certificates", ErrMalformed)
	}
	auth, err := parseAuthenticatorData(obj.AuthData, true)
	if err != nil {
		return Attestation{}, err
	}
	certs := make([]*x509.Certificate, len(obj.AttStmt.X5c))
	for i, der := range obj.AttStmt.X5c {
		if certs[i], err = x509.ParseCertificate(der); err != nil {
			return Attestation{}, fmt.Errorf("%w: x5c[%d]: %v", ErrMalformed, i, err)
		}
	}
	credCert := certs[0]

	// Step 1: x5c is the credential certificate then its intermediate,
	// and they chain to the App Attest root.
	if err := v.verifyChain(now, credCert, certs[1:]); err != nil {
		return Attestation{}, err
	}

	// Steps 2 and 3: nonce = SHA-256(authData || SHA-256(challenge)).
	clientDataHash := sha256.Sum256(challenge)
	nonce := sha256.Sum256(slices.Concat(obj.AuthData, clientDataHash[:]))

	// Step 4: the credential certificate's nonce extension holds it.
	certNonce, err := nonceOf(credCert)
	if err != nil {
		return Attestation{}, err
	}
	if !bytes.Equal(certNonce, nonce[:]) {
		return Attestation{}, fmt.Errorf("%w: the certificate's nonce is not that of this authenticator data and challenge", ErrAttestation)
	}

	// Step 5: SHA-256 of the certificate's public key is the key id.
	pub, _ := credCert.PublicKey.(*ecdsa.PublicKey)
	key, err := keyOf(pub)
	if err != nil {
		return Attestation{}, fmt.Errorf("%w: credential certificate: %v", ErrAttestation, err)
	}
	if !bytes.Equal(key.ID, keyID) {
		return Attestation{}, fmt.Errorf("%w: the certificate's key is not the key id given", ErrAttestation)
	}

	// Step 6: the RP ID hash is SHA-256 of the App ID.
	if !bytes.Equal(auth.rpIDHash, v.appIDHash[:]) {
		return Attestation{}, fmt.Errorf("%w: attested for another App ID", ErrAttestation)
	}

	// Step 7: a new key has signed nothing yet.
	if auth.counter != 0 {
		return Attestation{}, fmt.Errorf("%w: counter %d, want 0", ErrAttestation, auth.counter)
	}

	// Step 8: the environment, development only when asked for.
	development := bytes.Equal(auth.aaguid, aaguidDevelopment)
	switch {
	case bytes.Equal(auth.aaguid, aaguidProduction):
	case development && v.development:
	case development:
		return Attestation{}, fmt.Errorf("%w: a development attestation, and development is not allowed", ErrAttestation)
	default:
		return Attestation{}, fmt.Errorf("%w: AAGUID %q is not App Attest's", ErrAttestation, auth.aaguid)
	}

	// Step 9: the credential id is the key id too.
	if !bytes.Equal(auth.credentialID, keyID) {
		return Attestation{}, fmt.Errorf("%w: the authenticator data's credential id is not the key id", ErrAttestation)
	}

	return Attestation{
		Key:         key,
		Development: development,
		Receipt:     bytes.Clone(obj.AttStmt.Receipt),
	}, nil
}

// verifyChain checks that leaf chains through intermediates to one of the
// verifier's roots, each certificate valid at now.
func (v *Verifier) verifyChain(now time.Time, leaf *x509.Certificate, intermediates []*x509.Certificate) error {
	pool := x509.NewCertPool()
	for _, c := range intermediates {
		pool.AddCert(c)
	}
	// The nonce extension is checked here, not by crypto/x509: should a
	// root mark it critical, it must not make the chain unverifiable.
	leaf.UnhandledCriticalExtensions = slices.DeleteFunc(slices.Clone(leaf.UnhandledCriticalExtensions),
		func(oid asn1.ObjectIdentifier) bool { return oid.Equal(oidNonce) })
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots:         v.roots,
		Intermediates: pool,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	if err != nil {
		return fmt.Errorf("%w: certificate chain: %v", ErrAttestation, err)
	}
	return nil
}

// nonceOf returns the nonce in cert's extension 1.2.840.113635.100.8.2.
func nonceOf(cert *x509.Certificate) ([]byte, error) {
	for _, ext := range cert.Extensions {
		if !ext.Id.Equal(oidNonce) {
			continue
		}
		var n nonceExtension
		rest, err := asn1.Unmarshal(ext.Value, &n)
		if err != nil || len(rest) != 0 {
			return nil, fmt.Errorf("%w: the credential certificate's nonce extension is not SEQUENCE { [1] OCTET STRING }", ErrAttestation)
		}
		return n.Nonce, nil
	}
	return nil, fmt.Errorf("%w: the credential certificate has no nonce extension", ErrAttestation)
}
