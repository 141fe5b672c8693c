package tokens

import (
	"bytes"
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// Admission verification, written out instead of going through
// jwt.Parser.ParseWithClaims, and with a faster Ed25519 verifier. It
// accepts exactly the tokens that parser (configured as in
// verifyReference, tokens/equivalence_test.go) accepts with the key set's
// public keys — which is what a gateway verifying with the JWKS accepts —
// and a differential fuzz test holds it to that:
//
//   - the same split into exactly three segments, the same strict base64url
//     decoding (jwt.WithStrictDecoding is RawURLEncoding.Strict());
//   - the header decoded into a map[string]any exactly as the parser does,
//     except when it is byte for byte the header Issue writes for a kid of
//     the set, whose decoding is known in advance; alg must be "EdDSA", no
//     crit, the kid must be in the current key set;
//   - the claims decoded by the same json.Unmarshal into admissionClaims
//     (except when they have exactly the form Issue writes, which
//     issuedClaims reads to the same values without encoding/json: 3.5 µs
//     and 28 allocations less per check, bench/RESULTS.md) and
//     validated by the same jwt.Validator with the same options;
//   - the signature checked, on a node (which holds every private key of
//     its key set), by signing the header and claims again with the kid's
//     private key and comparing the two signatures in constant time.
//     Ed25519 signing is deterministic (RFC 8032: the nonce is a hash of
//     the key and the message), so a message has exactly one signature by
//     a given key, the one Issue wrote; signing costs half of verifying
//     (one fixed-base scalar multiplication instead of a double one:
//     bench/RESULTS.md). Every signature this accepts, crypto/ed25519.Verify
//     accepts too; the only ones it refuses that Verify accepts were made
//     with the private key itself and another nonce, which anteroom never
//     does (TestResignRefusesOtherNonces);
//   - with public keys alone (AdmissionKeys, from a JWKS), the signature
//     checked with curve25519-voi's Ed25519 using an expanded public key
//     precomputed once per kid, with VerifyOptionsStdLib: cofactorless,
//     S < L, R compared as bytes — the semantics of crypto/ed25519.Verify,
//     which golang-jwt calls, about 1.6 times as fast here.
//
// Nothing but a signing key of the set vouches for a token: there is no
// MAC, no shared secret and no cache of verdicts.

// b64Strict is jwt.Parser's segment decoding with WithStrictDecoding.
var b64Strict = base64.RawURLEncoding.Strict()

// stdlibVerify makes curve25519-voi verify as crypto/ed25519.Verify does.
var stdlibVerify = &voi.Options{Verify: voi.VerifyOptionsStdLib}

// verifyKey is one kid's precomputed verification state.
type verifyKey struct {
	header string                 // the header segment Issue writes for this kid
	pub    *voi.ExpandedPublicKey // the key, decompressed and negated once
	priv   voi.PrivateKey         // the private key where it is known, or nil
}

// newVerifyKeys precomputes the verification state of every key in pubs;
// privs holds the private keys known (nil for public keys alone).
func newVerifyKeys(pubs map[string]ed25519.PublicKey, privs map[string]ed25519.PrivateKey) (map[string]*verifyKey, error) {
	out := make(map[string]*verifyKey, len(pubs))
	for kid, pub := range pubs {
		x, err := voi.NewExpandedPublicKey(voi.PublicKey(pub))
		if err != nil {
			return nil, fmt.Errorf("tokens: key %s: %w", kid, err)
		}
		h, err := json.Marshal(map[string]string{"alg": jwt.SigningMethodEdDSA.Alg(), "kid": kid, "typ": "JWT"})
		if err != nil {
			return nil, err
		}
		vk := &verifyKey{header: base64.RawURLEncoding.EncodeToString(h), pub: x}
		if priv, ok := privs[kid]; ok {
			if !bytes.Equal(priv.Public().(ed25519.PublicKey), pub) {
				return nil, fmt.Errorf("tokens: key %s: private key of another public key", kid)
			}
			vk.priv = voi.PrivateKey(priv)
		}
		out[kid] = vk
	}
	return out, nil
}

// signJWT returns the JWT of claims (JSON) signed by vk, which holds its
// private key: the header Issue writes for vk's kid, the claims, the
// Ed25519 signature, each base64url — byte for byte what golang-jwt's
// SignedString gives for the same header and claims (TestIssueAsGolangJWT),
// at the cost of curve25519-voi's signing, about half of crypto/ed25519's
// here.
func signJWT(vk *verifyKey, claims []byte) string {
	msg := vk.header + "." + base64.RawURLEncoding.EncodeToString(claims)
	return msg + "." + base64.RawURLEncoding.EncodeToString(voi.Sign(vk.priv, []byte(msg)))
}

// signed reports whether sig is this key's signature of msg: with the
// private key, whether it is byte for byte the one signing msg gives
// (compared in constant time, so that the time taken tells nothing of the
// right signature); with the public key alone, whether crypto/ed25519.Verify
// would accept it.
func (vk *verifyKey) signed(msg, sig []byte) bool {
	if len(sig) != ed25519.SignatureSize {
		return false
	}
	if vk.priv != nil {
		return subtle.ConstantTimeCompare(voi.Sign(vk.priv, msg), sig) == 1
	}
	return voi.VerifyExpandedWithOptions(vk.pub, msg, sig, stdlibVerify)
}

// verifyToken checks raw against the key snapshot snap and returns its
// claims, or an error (to be wrapped in ErrInvalid).
func (i *Issuer) verifyToken(snap *keySnapshot, raw string, now time.Time) (*admissionClaims, error) {
	h64, rest, ok := strings.Cut(raw, ".")
	if !ok {
		return nil, errors.New("token contains an invalid number of segments")
	}
	p64, s64, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(s64, ".") {
		return nil, errors.New("token contains an invalid number of segments")
	}
	vk, err := keyOf(snap, h64)
	if err != nil {
		return nil, err
	}
	payload, err := b64Strict.DecodeString(p64)
	if err != nil {
		return nil, fmt.Errorf("could not base64 decode claim: %w", err)
	}
	var c admissionClaims
	if !issuedClaims(payload, &c) {
		if err := json.Unmarshal(payload, &c); err != nil {
			return nil, fmt.Errorf("could not JSON decode claim: %w", err)
		}
	}
	sig, err := b64Strict.DecodeString(s64)
	if err != nil {
		return nil, fmt.Errorf("could not base64 decode signature: %w", err)
	}
	if !vk.signed([]byte(raw[:len(h64)+1+len(p64)]), sig) {
		return nil, errors.New("token signature is invalid")
	}
	v := jwt.NewValidator(
		jwt.WithIssuer(i.issuer),
		jwt.WithAudience(i.audience),
		jwt.WithExpirationRequired(),
		jwt.WithNotBeforeRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(i.leeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if err := v.Validate(c); err != nil {
		return nil, err
	}
	return &c, nil
}

// keyOf reads the header segment h64 and returns the key it names. A
// header Issue wrote is recognized by its bytes; any other is decoded and
// checked as jwt.Parser and the key function of verifyReference do.
func keyOf(snap *keySnapshot, h64 string) (*verifyKey, error) {
	if len(h64) < 200 { // an exact header of ours is about 110 bytes
		for _, vk := range snap.verify {
			if vk.header == h64 {
				return vk, nil
			}
		}
	}
	hb, err := b64Strict.DecodeString(h64)
	if err != nil {
		return nil, fmt.Errorf("could not base64 decode header: %w", err)
	}
	var h map[string]any
	if err := json.Unmarshal(hb, &h); err != nil {
		return nil, fmt.Errorf("could not JSON decode header: %w", err)
	}
	if alg, _ := h["alg"].(string); alg != jwt.SigningMethodEdDSA.Alg() {
		return nil, fmt.Errorf("signing method %q is invalid", h["alg"])
	}
	if _, ok := h["crit"]; ok {
		return nil, errors.New("crit header not supported")
	}
	kid, _ := h["kid"].(string)
	vk, ok := snap.verify[kid]
	if !ok {
		return nil, fmt.Errorf("unknown kid %q", kid)
	}
	return vk, nil
}
