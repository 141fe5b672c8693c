package appattest

import (
	"errors"
	"testing"
)

// FuzzVerifyAttestation: any input gives ErrMalformed or ErrAttestation
// (or passes: Apple's receipt is outside the nonce), never a panic or
// another error.
func FuzzVerifyAttestation(f *testing.F) {
	ca, d := newTestCA(f), newDevice(f)
	v := newTestVerifier(f, ca, Config{})
	f.Add(attest(f, ca, d, attestation{}))
	f.Add(attest(f, ca, d, attestation{AAGUID: aaguidDevelopment}))
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, object []byte) {
		_, err := v.VerifyAttestation(testNow, object, d.ID, testChallenge)
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrAttestation) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// FuzzVerifyAssertion: any input gives ErrMalformed, ErrAttestation or
// ErrReplay; what passes carries a counter above the last.
func FuzzVerifyAssertion(f *testing.F) {
	ca, d := newTestCA(f), newDevice(f)
	v := newTestVerifier(f, ca, Config{})
	key := attestedKey(f, v, ca, d)
	f.Add(d.Assertion(f, testAppID, 3, testClientData), uint32(2))
	f.Add([]byte{0xa0}, uint32(0))
	f.Fuzz(func(t *testing.T, assertion []byte, last uint32) {
		c, err := v.VerifyAssertion(key, last, assertion, testClientData)
		switch {
		case err == nil && c <= last:
			t.Fatalf("passed with counter %d after %d", c, last)
		case err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrAttestation) && !errors.Is(err, ErrReplay):
			t.Fatalf("unexpected error %v", err)
		}
	})
}
