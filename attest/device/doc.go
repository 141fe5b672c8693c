// Package device wires device attestation to a sale: it issues one-time
// challenges, registers an iOS app's App Attest key after verifying its
// attestation object (package attest/appattest), and checks that a join
// or claim comes from an attested app: an App Attest assertion by a
// registered key, or a Google Play Integrity token (package
// attest/playintegrity), over the request and a fresh challenge.
//
// # The invariant: a challenge proves once
//
// A challenge (challenge.go) is signed by the node's secret: the instant
// it was issued, random bytes and an HMAC binding them to the sale.
// Issuing one writes nothing to Redis, so asking for challenges costs an
// attacker's bandwidth, not the node's memory; any node recognises it
// for Config.ChallengeTTL. Evidence names one challenge, and the step
// that accepts the evidence records the challenge spent (a marker that
// outlives its validity) in the same script as its other writes
// (register.lua, assert.lua; SET NX for a Play Integrity token): of two
// requests carrying the same evidence, one goes on and the other is
// refused ErrChallenge. Evidence that fails a check writes nothing: the
// challenge stays unspent, no key is stored, no counter moves.
//
// # What a request signs
//
// A join or claim carries, in headers, the challenge (X-Attest-Challenge)
// and either the key id (X-Attest-Key-Id, base64) and an App Attest
// assertion (X-Attest-Assertion, base64 CBOR) or a Play Integrity token
// (X-Play-Integrity). Both sign [ClientData]: the event, the method, the
// path, the challenge and the SHA-256 of the body, joined by newlines.
// The assertion's clientDataHash is SHA-256 of it (what the app hands
// generateAssertion); the Play Integrity standard request's requestHash
// is [RequestHash], its SHA-256 in lower-case hex. The node rebuilds
// ClientData from the request it received, never from the app's copy.
//
// An assertion's counter must exceed the last one stored for its key:
// assert.lua stores the new counter with compare-and-set, atomically with
// the challenge's spending ([appattest.CounterStore]).
//
// # Keys in Redis
//
// Every key of a sale shares the hash tag {<event>#att}, so each script
// runs on one Redis Cluster shard: ar:{ev#att}:s:<challenge> (a spent
// challenge, until it would have expired) and ar:{ev#att}:k:<key id hex> (an attested
// key: its public key and last counter, kept until the sale's signals
// expire, event.Config.SignalsUntil).
//
// A Service is safe for concurrent use.
package device
