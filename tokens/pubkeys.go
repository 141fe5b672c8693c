package tokens

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// RSA key sizes accepted for user tokens, in bits.
const (
	minRSABits = 2048
	maxRSABits = 8192
)

// publicKey is one verification key of a shop: its kid ("" when it came
// from PEM or the JWK had none), the one JWS algorithm it verifies, and the
// key (*rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey).
type publicKey struct {
	kid string
	alg string
	key any
}

// jwkMembers are the JWK members this parser reads (RFC 7517, 7518, 8037).
type jwkMembers struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Alg    string   `json:"alg"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
	Crv    string   `json:"crv"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	D      string   `json:"d"`
	P      string   `json:"p"`
	K      string   `json:"k"`
}

// parsePublicKeys reads a JWK Set (or a single JWK) in JSON, or a sequence of
// PEM blocks (PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE), and returns the
// keys usable for RS256, ES256 or EdDSA.
//
// JWKs of other types or curves, with a use other than "sig", with key_ops
// lacking "verify", or with an alg that does not fit the key are skipped (a
// shop's JWKS may hold keys meant for others). A JWK carrying private or
// symmetric key material, a malformed supported key, an RSA key outside
// 2048..8192 bits, or input without a single usable key is an error.
func parsePublicKeys(data []byte) ([]publicKey, error) {
	text := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(text, []byte("{")):
		return parseJWKS(text)
	case bytes.Contains(text, []byte("-----BEGIN")):
		return parsePEMKeys(text)
	}
	return nil, errors.New("tokens: key file is neither JSON (JWKS) nor PEM")
}

func parseJWKS(data []byte) ([]publicKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
		Kty  string            `json:"kty"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("tokens: JWKS: %w", err)
	}
	raws := set.Keys
	if raws == nil && set.Kty != "" { // a single JWK
		raws = []json.RawMessage{data}
	}
	var keys []publicKey
	for n, raw := range raws {
		var m jwkMembers
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("tokens: JWKS key %d: %w", n, err)
		}
		k, ok, err := parseJWK(m)
		if err != nil {
			return nil, fmt.Errorf("tokens: JWKS key %d (kid %q): %w", n, m.Kid, err)
		}
		if ok {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("tokens: JWKS holds no RS256, ES256 or EdDSA signature key")
	}
	return keys, nil
}

// parseJWK returns the key, false if it is of a kind this package skips, or
// an error if it is broken or dangerous.
func parseJWK(m jwkMembers) (publicKey, bool, error) {
	if m.D != "" || m.P != "" || m.K != "" {
		return publicKey{}, false, errors.New("holds private or symmetric key material; publish public keys only")
	}
	if m.Use != "" && m.Use != "sig" {
		return publicKey{}, false, nil
	}
	if m.KeyOps != nil && !slices.Contains(m.KeyOps, "verify") {
		return publicKey{}, false, nil
	}
	k := publicKey{kid: m.Kid}
	var err error
	switch {
	case m.Kty == "RSA" && (m.Alg == "" || m.Alg == "RS256"):
		k.alg = "RS256"
		k.key, err = jwkRSA(m.N, m.E)
	case m.Kty == "EC" && m.Crv == "P-256" && (m.Alg == "" || m.Alg == "ES256"):
		k.alg = "ES256"
		k.key, err = jwkP256(m.X, m.Y)
	case m.Kty == "OKP" && m.Crv == "Ed25519" && (m.Alg == "" || m.Alg == "EdDSA" || m.Alg == "Ed25519"):
		k.alg = "EdDSA"
		var x []byte
		if x, err = unb64(m.X); err == nil && len(x) != ed25519.PublicKeySize {
			err = fmt.Errorf("Ed25519 x is %d bytes, want %d", len(x), ed25519.PublicKeySize)
		}
		k.key = ed25519.PublicKey(x)
	default:
		return publicKey{}, false, nil
	}
	if err != nil {
		return publicKey{}, false, err
	}
	return k, true, nil
}

func jwkRSA(n64, e64 string) (*rsa.PublicKey, error) {
	n, err := unb64(n64)
	if err != nil || len(n) == 0 {
		return nil, errors.New("RSA modulus n is not base64url")
	}
	e, err := unb64(e64)
	if err != nil || len(e) == 0 || len(e) > 4 {
		return nil, errors.New("RSA exponent e is not 1..4 bytes of base64url")
	}
	var exp int64
	for _, b := range e {
		exp = exp<<8 | int64(b)
	}
	return checkRSA(&rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(exp)})
}

func checkRSA(k *rsa.PublicKey) (*rsa.PublicKey, error) {
	if bits := k.N.BitLen(); bits < minRSABits || bits > maxRSABits {
		return nil, fmt.Errorf("RSA key is %d bits, want %d..%d", bits, minRSABits, maxRSABits)
	}
	if k.E < 3 || k.E%2 == 0 || k.E > 1<<31-1 {
		return nil, fmt.Errorf("RSA exponent %d is not an odd number in 3..2^31-1", k.E)
	}
	return k, nil
}

func jwkP256(x64, y64 string) (*ecdsa.PublicKey, error) {
	x, errX := unb64(x64)
	y, errY := unb64(y64)
	if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
		return nil, errors.New("P-256 x and y must be 32 bytes of base64url each")
	}
	k, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), slices.Concat([]byte{4}, x, y))
	if err != nil {
		return nil, fmt.Errorf("P-256 point: %w", err)
	}
	return k, nil
}

// parsePEMKeys reads every PEM block of data; keys from PEM have no kid.
func parsePEMKeys(data []byte) ([]publicKey, error) {
	var keys []publicKey
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) > 0 && len(keys) == 0 {
				return nil, errors.New("tokens: PEM: no block could be decoded")
			}
			break
		}
		var key any
		var err error
		switch block.Type {
		case "PUBLIC KEY":
			key, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			key, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				key = cert.PublicKey
			}
		default:
			if strings.Contains(block.Type, "PRIVATE") {
				return nil, fmt.Errorf("tokens: PEM %s: publish public keys only", block.Type)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("tokens: PEM %s: %w", block.Type, err)
		}
		k, err := pemKey(key)
		if err != nil {
			return nil, fmt.Errorf("tokens: PEM %s: %w", block.Type, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("tokens: PEM holds no public key")
	}
	return keys, nil
}

func pemKey(key any) (publicKey, error) {
	switch k := key.(type) {
	case *rsa.PublicKey:
		_, err := checkRSA(k)
		return publicKey{alg: "RS256", key: k}, err
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return publicKey{}, fmt.Errorf("EC curve %s not supported, want P-256", k.Curve.Params().Name)
		}
		return publicKey{alg: "ES256", key: k}, nil
	case ed25519.PublicKey:
		return publicKey{alg: "EdDSA", key: k}, nil
	}
	return publicKey{}, fmt.Errorf("%T keys not supported", key)
}
