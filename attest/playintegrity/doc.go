// Package playintegrity verifies Google Play Integrity tokens offline, in
// local decryption mode, with the operator's two keys from the Play
// Console: the decryption key (a base64 AES-256 key) and the verification
// key (a base64 DER EC P-256 public key, X.509 SubjectPublicKeyInfo).
//
// An integrity token is a compact JWE (alg A256KW, enc A256GCM) whose
// plaintext is a compact JWS (alg ES256) over the verdict JSON. The package
// owns one rule: a [Verdict] is returned only for a token that
//
//  1. is a compact JWE with exactly alg A256KW and enc A256GCM (no "zip")
//     and decrypts under the decryption key;
//  2. holds a compact JWS with exactly alg ES256 whose signature verifies
//     under the verification key;
//  3. was requested for what the caller expects ([Expect]: the nonce of a
//     classic request or the request hash of a standard one, compared in
//     constant time) by the configured package;
//  4. was issued no longer ago than [Config.MaxAge], and no further in the
//     future than [Config.MaxSkew];
//  5. carries the app, device and licensing verdicts a [Policy] requires
//     (its zero value: PLAY_RECOGNIZED and MEETS_DEVICE_INTEGRITY).
//
// Any other algorithm (none, dir, RSA, HS256 keyed with the public key, …)
// is refused before a key is used. Every check happens on every call; a
// token that passes one policy may fail a stricter one.
//
// Errors: [ErrMalformed] for a token that does not parse as a compact JWE
// (a client fault: 400); [ErrAttestation] for one that does but fails a
// check (403 attestation_failed), including anything wrong inside the
// encryption; a token older than MaxAge is refused with [ErrStale], which
// is an ErrAttestation of its own kind (errors.Is(ErrStale, ErrAttestation)).
//
// What the package does not own: that a nonce or request hash is spent
// once. It checks a token is bound to the caller's challenge; the caller
// issues the challenge and records its use (a replayed token carries a
// spent challenge).
package playintegrity
