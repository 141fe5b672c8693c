// Package attesttest builds device attestation evidence for tests, in the
// documented formats, from roots and keys the tests make: an App Attest
// certificate authority shaped like Apple's and an app's device key
// (attestation objects and assertions), and an operator's Play Integrity
// keys (integrity tokens). Nothing here is trusted in production: the
// node trusts Apple's pinned root unless a test hands it AppleCA.Roots,
// and a Play Integrity token verifies only under the operator's keys.
//
// Helpers fail the test (t.Fatal) rather than return errors.
package attesttest
