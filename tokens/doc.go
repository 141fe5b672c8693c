// Package tokens mints and verifies everything anteroom hands to a caller as
// proof: queue tickets, admission tokens, the key set that signs admission
// tokens (with its JWKS), and the identity of the caller (a shop's own user
// token, or an anonymous visitor cookie).
//
// # Model
//
//   - A queue ticket ([Tickets]) is a compact HS256 JWT over (event, user,
//     seq, issued-at). It never expires: the queue decides what a seq is
//     worth. Signing is deterministic so a repeated join returns the very same
//     ticket string.
//   - An admission token ([Issuer]) is an EdDSA (Ed25519) JWT with a kid, an
//     issuer, an audience and a short lifetime. Anyone holding the public keys
//     from [KeySet.JWKS] can verify it offline (Envoy jwt_authn, Kong, any
//     JOSE library), and [Issuer.Verify] accepts only tokens such a
//     verifier accepts: the Ed25519 signature is always checked (by
//     signing again with the kid's private key: see verify.go), and no
//     shared secret or MAC can stand in for it.
//   - [KeySet] is a directory of Ed25519 keys shared by every node: one active
//     signer, a next key published before it signs ([KeySet.PublishNext],
//     [KeySet.Promote]), older keys kept for verification until
//     [KeySet.Retire] removes them.
//   - [UserVerifier] checks a shop's user tokens (RS256, ES256 or EdDSA) and
//     [Visitors] signs anonymous visitor ids.
//
// # Invariants
//
// Every verifier pins its algorithms before looking at a key (tickets accept
// exactly one header; admission and user tokens a fixed alg list), finds
// keys only inside its own set, refuses input longer than a fixed bound
// before decoding, requires every claim it later reads, accepts only
// canonical base64url, and never panics on untrusted input (each verifier
// has a fuzz target). Verification failures
// wrap exactly one of two sentinels so that one place can map them to HTTP:
// [ErrInvalid] (401) and [ErrWrongEvent] (403). The wrapped text says why
// (expired, unknown kid, ...) for logs; it is not meant for clients.
//
// The package knows nothing about Redis or HTTP. Time is always passed in.
package tokens

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

var (
	// ErrInvalid reports a token, ticket or cookie that must not be trusted:
	// malformed, forged, signed with an unexpected algorithm or an unknown
	// key, missing a required claim, expired or not yet valid. Map to 401.
	ErrInvalid = errors.New("tokens: invalid token")

	// ErrWrongEvent reports a genuine, valid token that was issued for another
	// event than the one requested. Map to 403.
	ErrWrongEvent = errors.New("tokens: token is for another event")
)

const (
	// maxTokenLen bounds tickets and admission tokens; longer input is
	// rejected before any decoding.
	maxTokenLen = 4096

	// maxIDLen bounds event and user identifiers put into a token, so that a
	// signed token always stays well below maxTokenLen.
	maxIDLen = 256
)

// invalid wraps ErrInvalid with a detail for logs.
func invalid(detail any) error {
	return fmt.Errorf("%w: %v", ErrInvalid, detail)
}

// checkID validates an identifier before it is signed into a token. JSON
// would silently replace invalid UTF-8 with U+FFFD, so two different ids
// could end up as the same claim: refuse them instead.
func checkID(what, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("tokens: empty %s", what)
	case len(id) > maxIDLen:
		return fmt.Errorf("tokens: %s longer than %d bytes", what, maxIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("tokens: %s is not valid UTF-8", what)
	}
	return nil
}
