package appattest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
)

// assertionObject is the CBOR map an app's generateAssertion call returns.
type assertionObject struct {
	Signature         []byte `cbor:"signature"`
	AuthenticatorData []byte `cbor:"authenticatorData"`
}

// VerifyAssertion checks an assertion made by key over clientData,
// following Apple's "Verify the assertion" steps 1–5, and returns its
// counter, which is greater than lastCounter (the one stored for key, 0
// right after the attestation). Store the returned counter with
// compare-and-set ([Advance]) before acting on the request.
//
// clientData is the data the app signed, as the server received or,
// better, rebuilt it; step 6, that it carries the server's challenge, is
// the caller's. It returns an error wrapping [ErrMalformed] when the
// assertion cannot be decoded, [ErrAttestation] when it is not key's
// signature for this app and clientData, and [ErrReplay] when its counter
// is not greater than lastCounter.
func (v *Verifier) VerifyAssertion(key Key, lastCounter uint32, assertion, clientData []byte) (uint32, error) {
	if key.PublicKey == nil {
		return 0, errors.New("appattest: VerifyAssertion without a key")
	}
	if len(assertion) > maxEvidenceLen {
		return 0, fmt.Errorf("%w: assertion of %d bytes", ErrMalformed, len(assertion))
	}
	var obj assertionObject
	if err := v.decode.Unmarshal(assertion, &obj); err != nil {
		return 0, fmt.Errorf("%w: assertion: %v", ErrMalformed, err)
	}
	if len(obj.Signature) == 0 {
		return 0, fmt.Errorf("%w: assertion has no signature", ErrMalformed)
	}
	auth, err := parseAuthenticatorData(obj.AuthenticatorData, false)
	if err != nil {
		return 0, err
	}

	// Steps 1 and 2: nonce = SHA-256(authenticatorData || SHA-256(clientData)).
	clientDataHash := sha256.Sum256(clientData)
	nonce := sha256.Sum256(slices.Concat(obj.AuthenticatorData, clientDataHash[:]))

	// Step 3: the stored key signed it (ECDSA P-256, ASN.1 DER signature).
	if !ecdsa.VerifyASN1(key.PublicKey, nonce[:], obj.Signature) {
		return 0, fmt.Errorf("%w: the assertion's signature is not the key's", ErrAttestation)
	}

	// Step 4: the RP ID hash is SHA-256 of the App ID.
	if !bytes.Equal(auth.rpIDHash, v.appIDHash[:]) {
		return 0, fmt.Errorf("%w: asserted for another App ID", ErrAttestation)
	}

	// Step 5: the counter grew since the last assertion stored.
	if auth.counter <= lastCounter {
		return 0, fmt.Errorf("%w: counter %d, last %d", ErrReplay, auth.counter, lastCounter)
	}
	return auth.counter, nil
}
