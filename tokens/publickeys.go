package tokens

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"time"
)

// AdmissionKeys verifies admission tokens with public keys alone: the
// Ed25519 keys of a node's JWKS (GET /.well-known/jwks.json, [KeySet.JWKS]),
// for a service that checks tokens offline. Verify runs the checks
// [Issuer.Verify] runs (the same code): EdDSA only, a kid of this set,
// every claim required, iss and aud pinned, exp, nbf and iat with leeway;
// without the private keys it verifies the signature as crypto/ed25519
// does, so it also accepts a signature made with the key and another nonce,
// which a node refuses.
//
// An *AdmissionKeys is immutable and safe for concurrent use; to follow a
// key rotation, parse the JWKS again. The zero value is not usable; call
// [ParseAdmissionKeys].
type AdmissionKeys struct {
	snap *keySnapshot // pubs and verify only: no signer
	iss  *Issuer      // its issuer, audience and leeway; keys nil
}

// ParseAdmissionKeys reads a JWK Set and keeps its Ed25519 signature keys
// that have a kid (an admission token names its key). Keys of other types,
// or meant for another use, are skipped; a JWK with private key material,
// a malformed Ed25519 key, two keys of one kid, or a set without a single
// usable key is an error. cfg's iss, aud and leeway are those Verify
// requires, as in [NewIssuer].
func ParseAdmissionKeys(jwks []byte, cfg IssuerConfig) (*AdmissionKeys, error) {
	keys, err := parseJWKS(jwks)
	if err != nil {
		return nil, err
	}
	pubs := map[string]ed25519.PublicKey{}
	for _, k := range keys {
		if k.alg != "EdDSA" || k.kid == "" {
			continue
		}
		if _, dup := pubs[k.kid]; dup {
			return nil, fmt.Errorf("tokens: JWKS has two keys of kid %q", k.kid)
		}
		pubs[k.kid] = k.key.(ed25519.PublicKey)
	}
	if len(pubs) == 0 {
		return nil, errors.New("tokens: JWKS holds no Ed25519 key with a kid")
	}
	verify, err := newVerifyKeys(pubs, nil)
	if err != nil {
		return nil, err
	}
	return &AdmissionKeys{snap: &keySnapshot{pubs: pubs, verify: verify}, iss: NewIssuer(nil, cfg)}, nil
}

// Has reports whether kid is one of the set's keys.
func (a *AdmissionKeys) Has(kid string) bool {
	_, ok := a.snap.verify[kid]
	return ok
}

// Kids returns the set's kids, sorted.
func (a *AdmissionKeys) Kids() []string {
	kids := make([]string, 0, len(a.snap.verify))
	for kid := range a.snap.verify {
		kids = append(kids, kid)
	}
	slices.Sort(kids)
	return kids
}

// Verify checks raw at instant now for event as [Issuer.Verify] does and
// returns the admission it carries: an error wrapping [ErrInvalid] for
// anything malformed, forged, signed by a key not in the set, incomplete,
// expired or not yet valid, and one wrapping [ErrWrongEvent] for a valid
// token of another event.
func (a *AdmissionKeys) Verify(raw, event string, now time.Time) (Admission, error) {
	if len(raw) > maxTokenLen {
		return Admission{}, invalid(fmt.Sprintf("token longer than %d bytes", maxTokenLen))
	}
	c, err := a.iss.verifyToken(a.snap, raw, now)
	if err != nil {
		return Admission{}, invalid(err)
	}
	return a.iss.admissionOf(c, event)
}
