package tokens

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// Invites and passes are HMAC-signed lists of fields, keyed by a key
// derived from the deployment's ticket secret for each use.

// deriveKey gives each use of the shared secret a key of its own.
func deriveKey(secret []byte, label string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	return m.Sum(nil)
}

// fieldMAC is HMAC-SHA256 under key of fields, each followed by a zero
// byte (which no field holds), so no two lists of fields sign alike.
func fieldMAC(key []byte, fields ...string) []byte {
	m := hmac.New(sha256.New, key)
	for _, f := range fields {
		m.Write([]byte(f))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

// signature is mac in base64url without padding.
func signature(mac []byte) string { return base64.RawURLEncoding.EncodeToString(mac) }

// signatureMatches reports whether sig is exactly signature(want), compared
// in constant time. The decoder skips CR and LF, so only the canonical
// encoding counts.
func signatureMatches(sig string, want []byte) bool {
	got, err := base64.RawURLEncoding.DecodeString(sig)
	return err == nil && signature(got) == sig && hmac.Equal(got, want)
}
