package device

import "errors"

// Outcomes callers branch on; match them with errors.Is. The evidence's
// own failures are the attest packages' (appattest.ErrAttestation,
// appattest.ErrReplay, playintegrity.ErrAttestation, …), wrapped.
var (
	// ErrRequired: the sale requires attestation and the request carries
	// none (a browser, or an app that did not attest): 403
	// attestation_failed.
	ErrRequired = errors.New("device: this sale requires an attested app")

	// ErrChallenge: the evidence names a challenge this node never
	// issued for the sale, one already spent (a replay) or one expired:
	// 403 attestation_failed.
	ErrChallenge = errors.New("device: the attestation challenge is spent, expired or unknown")

	// ErrMalformed: the attestation headers or body cannot be read (not
	// base64, a key id not 32 bytes, a challenge of the wrong shape, both
	// platforms at once): 400.
	ErrMalformed = errors.New("device: malformed attestation request")
)
