package appattest

import "errors"

// Outcomes callers branch on; match them with errors.Is. Each returned
// error wraps one of them with the detail.
var (
	// ErrMalformed reports evidence that cannot be decoded: not CBOR, a
	// missing or mistyped field, authenticator data too short, an
	// unparsable certificate, another attestation format.
	ErrMalformed = errors.New("appattest: malformed attestation or assertion")

	// ErrAttestation reports well-formed evidence that fails a check: an
	// untrusted or expired chain, a nonce, key id, App ID, AAGUID or
	// counter that does not match, a bad assertion signature.
	ErrAttestation = errors.New("appattest: attestation failed")

	// ErrReplay reports an assertion whose counter is not greater than the
	// last one stored for its key: a replayed or reordered assertion.
	ErrReplay = errors.New("appattest: assertion counter did not increase")
)
