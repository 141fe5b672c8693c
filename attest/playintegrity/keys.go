package playintegrity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// ParseDecryptionKey decodes the Play Console's decryption key: base64
// (standard or URL alphabet, padded or not, surrounding white space
// ignored) of exactly 32 bytes, the AES-256 key that unwraps each token's
// content key. Its errors never quote the key.
func ParseDecryptionKey(s string) ([]byte, error) {
	key, err := decodeBase64(s)
	if err != nil {
		return nil, fmt.Errorf("play integrity decryption key: not base64: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("play integrity decryption key: %d bytes, want 32 (an AES-256 key)", len(key))
	}
	return key, nil
}

// ParseVerificationKey decodes the Play Console's verification key: base64
// (as ParseDecryptionKey) of a DER X.509 SubjectPublicKeyInfo holding an
// ECDSA P-256 public key, the key that verifies each token's ES256
// signature. Any other key type or curve is refused.
func ParseVerificationKey(s string) (*ecdsa.PublicKey, error) {
	if strings.Contains(s, "-----BEGIN") {
		return nil, errors.New("play integrity verification key: a PEM block; give the base64 between its BEGIN and END lines")
	}
	der, err := decodeBase64(s)
	if err != nil {
		return nil, fmt.Errorf("play integrity verification key: not base64: %w", err)
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("play integrity verification key: not a DER SubjectPublicKeyInfo: %w", err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("play integrity verification key: a %T, want an EC P-256 public key", pub)
	}
	if ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("play integrity verification key: curve %s, want P-256", ec.Curve.Params().Name)
	}
	return ec, nil
}

// decodeBase64 decodes s in any of the four base64 forms, ignoring white
// space anywhere (a key pasted from a console or a PEM-like wrap).
func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n':
			return -1
		}
		return r
	}, s)
	if s == "" {
		return nil, errors.New("empty")
	}
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}
