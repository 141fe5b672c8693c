package appattest

import (
	"testing"
	"time"

	"github.com/anteroom/anteroom/attest/attesttest"
)

// The tests build App Attest evidence in Apple's documented format with
// attesttest, from a test root, an intermediate and a device key, as a
// phone and Apple's attestation service would.

const testAppID = "ABCDE12345.com.example.shop"

// testNow is the instant every test verifies at.
var testNow = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

var testChallenge = []byte("one-time challenge 7f3a")

// attestation says how to build an attestation object; the zero value of
// each field means "as Apple would" for testAppID and testChallenge.
type attestation = attesttest.Attestation

func newTestCA(t testing.TB) *attesttest.AppleCA { return attesttest.NewAppleCAAt(t, testNow) }

func newDevice(t testing.TB) *attesttest.Device { return attesttest.NewDevice(t) }

// attest returns the attestation object a describes for d, issued by ca.
func attest(t testing.TB, ca *attesttest.AppleCA, d *attesttest.Device, a attestation) []byte {
	t.Helper()
	if a.AppID == "" {
		a.AppID = testAppID
	}
	if a.Challenge == nil {
		a.Challenge = testChallenge
	}
	return ca.AttestWith(t, d, a)
}

// newTestVerifier returns a verifier trusting only ca's root.
func newTestVerifier(t testing.TB, ca *attesttest.AppleCA, cfg Config) *Verifier {
	t.Helper()
	if cfg.AppID == "" {
		cfg.AppID = testAppID
	}
	cfg.Roots = ca.Roots()
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
