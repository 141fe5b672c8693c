package tokens

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// b64 encodes with unpadded base64url, the encoding JOSE uses everywhere.
func b64(data []byte) string { return base64.RawURLEncoding.EncodeToString(data) }

// unb64 decodes unpadded base64url strictly: padding, other alphabets and
// non-zero trailing bits are refused, so each value has one encoding.
func unb64(s string) ([]byte, error) { return base64.RawURLEncoding.Strict().DecodeString(s) }

// okpJWK is the public JWK (RFC 8037) of an Ed25519 key, members in the
// order JWKS prints them.
type okpJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// thumbprint returns the RFC 7638 JWK thumbprint of an Ed25519 public key:
// base64url(SHA-256 of {"crv":"Ed25519","kty":"OKP","x":"..."}), the
// required members in lexicographic order with no whitespace. It is 43
// characters of [A-Za-z0-9_-], so it is also a safe file name.
func thumbprint(pub ed25519.PublicKey) string {
	canon := `{"crv":"Ed25519","kty":"OKP","x":"` + b64(pub) + `"}`
	sum := sha256.Sum256([]byte(canon))
	return b64(sum[:])
}

// encodeJWKS returns the RFC 7517 JWK Set for keys, in the order of kids.
func encodeJWKS(kids []string, keys map[string]ed25519.PublicKey) ([]byte, error) {
	set := struct {
		Keys []okpJWK `json:"keys"`
	}{Keys: make([]okpJWK, 0, len(kids))}
	for _, kid := range kids {
		set.Keys = append(set.Keys, okpJWK{
			Kty: "OKP", Crv: "Ed25519", X: b64(keys[kid]),
			Kid: kid, Alg: "EdDSA", Use: "sig",
		})
	}
	out, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("tokens: marshal JWKS: %w", err)
	}
	return out, nil
}
