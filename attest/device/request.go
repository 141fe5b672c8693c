package device

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// The headers a join or claim carries its attestation in.
const (
	// ChallengeHeader carries the challenge (POST /events/{id}/attest/challenge).
	ChallengeHeader = "X-Attest-Challenge"
	// KeyIDHeader carries the App Attest key id, base64 as the app has it.
	KeyIDHeader = "X-Attest-Key-Id"
	// AssertionHeader carries the App Attest assertion, base64 CBOR.
	AssertionHeader = "X-Attest-Assertion"
	// IntegrityHeader carries the Play Integrity token.
	IntegrityHeader = "X-Play-Integrity"
)

// Request is what a join or claim proves: the request as the node
// received it, and the attestation headers it carries.
type Request struct {
	// Event, Method and Path are the sale and the request line
	// ("POST", "/events/ev/claim", no query).
	Event, Method, Path string
	// Body is the request body as received.
	Body []byte
	// Challenge, KeyID, Assertion and Integrity are the headers.
	Challenge, KeyID, Assertion, Integrity string
}

// Presented reports whether r carries any attestation header.
func (r Request) Presented() bool {
	return r.Challenge != "" || r.KeyID != "" || r.Assertion != "" || r.Integrity != ""
}

// ClientData is what a request's attestation signs, rebuilt by the node:
//
//	anteroom-attest-v1\n<event>\n<METHOD>\n<path>\n<challenge>\n<hex SHA-256 of the body>
//
// An App Attest assertion's clientDataHash is SHA-256 of it.
func ClientData(ev, method, path, challenge string, body []byte) []byte {
	sum := sha256.Sum256(body)
	return []byte(strings.Join([]string{"anteroom-attest-v1", ev, method, path, challenge, hex.EncodeToString(sum[:])}, "\n"))
}

// RequestHash is a Play Integrity standard request's requestHash for a
// request: SHA-256 of its ClientData in lower-case hex (64 characters).
func RequestHash(ev, method, path, challenge string, body []byte) string {
	sum := sha256.Sum256(ClientData(ev, method, path, challenge, body))
	return hex.EncodeToString(sum[:])
}
