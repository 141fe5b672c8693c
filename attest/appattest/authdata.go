package appattest

import (
	"encoding/binary"
	"fmt"
)

// authenticatorData is the WebAuthn authenticator data App Attest uses
// (https://www.w3.org/TR/webauthn-2/#sctn-authenticator-data):
//
//	rpIdHash 32 | flags 1 | signCount 4 (big-endian)
//	then, when the flags' AT bit is set (attestation):
//	aaguid 16 | credentialIdLength 2 (big-endian) | credentialId | credentialPublicKey (COSE)
type authenticatorData struct {
	rpIDHash     []byte
	flags        byte
	counter      uint32
	aaguid       []byte // attestation only
	credentialID []byte // attestation only
}

const (
	authDataMinLen         = 32 + 1 + 4
	attestedDataMinLen     = 16 + 2
	flagAttestedCredential = 0x40 // AT: attested credential data included
)

// parseAuthenticatorData reads the fixed part of raw and, when attested is
// true, the attested credential data's AAGUID and credential id (the COSE
// key after them is not read: the key that counts is the certificate's).
// The returned slices alias raw.
func parseAuthenticatorData(raw []byte, attested bool) (authenticatorData, error) {
	if len(raw) < authDataMinLen {
		return authenticatorData{}, fmt.Errorf("%w: authenticator data is %d bytes, want at least %d", ErrMalformed, len(raw), authDataMinLen)
	}
	ad := authenticatorData{
		rpIDHash: raw[:32],
		flags:    raw[32],
		counter:  binary.BigEndian.Uint32(raw[33:37]),
	}
	if !attested {
		return ad, nil
	}
	if ad.flags&flagAttestedCredential == 0 {
		return authenticatorData{}, fmt.Errorf("%w: authenticator data has no attested credential data", ErrMalformed)
	}
	rest := raw[authDataMinLen:]
	if len(rest) < attestedDataMinLen {
		return authenticatorData{}, fmt.Errorf("%w: attested credential data is %d bytes, want at least %d", ErrMalformed, len(rest), attestedDataMinLen)
	}
	ad.aaguid = rest[:16]
	n := int(binary.BigEndian.Uint16(rest[16:18]))
	rest = rest[18:]
	if len(rest) < n {
		return authenticatorData{}, fmt.Errorf("%w: credential id of %d bytes in %d", ErrMalformed, n, len(rest))
	}
	ad.credentialID = rest[:n]
	return ad, nil
}
