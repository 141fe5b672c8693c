// Package appattest verifies Apple App Attest evidence offline: the
// attestation object an app sends once for a new key, and the assertions
// it signs with that key afterwards. It owns the embedded, pinned Apple
// App Attestation Root CA and the checks of Apple's documented procedure,
// "Validating apps that connect to your server"
// (https://developer.apple.com/documentation/devicecheck/validating-apps-that-connect-to-your-server);
// it keeps no state: storing an attested key and its assertion counter is
// the caller's (see [CounterStore]).
//
// # Attestation, once per key
//
// [Verifier.VerifyAttestation] takes the attestation object (CBOR, fmt
// "apple-appattest"), the key identifier the app reports and the one-time
// challenge the server gave it, and runs Apple's steps 1–9: the x5c chain
// ends at a trusted root (only Apple's unless [Config.Roots] names
// another); the credential certificate's extension
// 1.2.840.113635.100.8.2 holds SHA-256(authenticatorData ||
// SHA-256(challenge)); SHA-256 of the certificate's public key (an
// uncompressed P-256 point) is the key identifier, and the authenticator
// data's credential id; its RP ID hash is SHA-256 of the App ID; its
// counter is 0; its AAGUID is "appattest" (production), or
// "appattestdevelop" only when [Config.AllowDevelopment] asks for it.
// The result is the attested [Key], to be stored with counter 0.
//
// # Assertions, once per request
//
// [Verifier.VerifyAssertion] runs Apple's assertion steps 1–5: the
// signature is the stored key's ECDSA P-256 signature over
// SHA-256(authenticatorData || SHA-256(clientData)), the RP ID hash is the
// App ID's and the counter is greater than the last one stored for the key;
// it returns the new counter. Step 6, that clientData carries the server's
// challenge, is the caller's: build clientData on the server from what the
// request must prove (its body, a challenge) rather than trusting the
// app's copy. Two requests carrying the same assertion both pass a check
// against the same stored counter: store the new counter with
// compare-and-set ([Advance]) so only one of them goes on.
//
// # Errors
//
// Evidence that cannot be decoded is [ErrMalformed] (a client error); a
// check that fails is [ErrAttestation]; a counter that does not grow is
// [ErrReplay]. Nothing here logs or panics on input, however malformed.
//
// A Verifier is immutable after [New] and safe for concurrent use.
package appattest
