package tokens

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The fast path. Verifying an Ed25519 signature costs tens of microseconds
// and is most of a claim's CPU. Admission tokens are verified far more
// often by the anteroom nodes that issued them than by anyone else, and
// those nodes already share a secret (the ticket secret). So when an
// [IssuerConfig] has a MACKey, Issue also writes a header parameter "amac":
// base64url of the first 16 bytes of HMAC-SHA256(MACKey, kid || "." ||
// payload segment), and Verify accepts a token whose amac matches without
// the Ed25519 check — about a microsecond. Every other check still runs:
// alg must be EdDSA, the kid must still be in the key set (retirement stays
// effective), no crit header, and all claims are validated exactly as on the
// full path. A token without a matching amac (another deployment's, a
// tampered one) takes the full path. Gateways ignore the unknown header
// parameter and verify the signature as always. Only holders of the MAC key
// — the nodes themselves — can mint a token the fast path accepts.

// AdmissionMACKey derives the fast path's MAC key from the nodes' shared
// ticket secret.
func AdmissionMACKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("anteroom/admission-mac/v1"))
	return m.Sum(nil)
}

const macParam = "amac"

func admissionMAC(key []byte, kid, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(kid))
	m.Write([]byte{'.'})
	m.Write([]byte(payload))
	return b64(m.Sum(nil)[:16])
}

// fastHeader is the JOSE header as the fast path reads it.
type fastHeader struct {
	Alg  string          `json:"alg"`
	Kid  string          `json:"kid"`
	Typ  string          `json:"typ"`
	AMAC string          `json:"amac"`
	Crit json.RawMessage `json:"crit"`
}

var errNoFastPath = errors.New("no fast path")

// verifyFast checks raw by its amac. It returns errNoFastPath when the
// token has no matching amac, so the caller verifies the signature instead.
func (i *Issuer) verifyFast(raw, event string, now time.Time) (Admission, error) {
	h64, rest, ok := strings.Cut(raw, ".")
	if !ok {
		return Admission{}, errNoFastPath
	}
	p64, sig, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(sig, ".") {
		return Admission{}, errNoFastPath
	}
	hraw, err := unb64(h64)
	if err != nil {
		return Admission{}, errNoFastPath
	}
	var h fastHeader
	if err := json.Unmarshal(hraw, &h); err != nil || h.AMAC == "" {
		return Admission{}, errNoFastPath
	}
	if subtle.ConstantTimeCompare([]byte(h.AMAC), []byte(admissionMAC(i.mac, h.Kid, p64))) != 1 {
		return Admission{}, errNoFastPath
	}
	// Our own token: everything but the signature is checked.
	snap := i.keys.snap.Load()
	switch {
	case h.Alg != jwt.SigningMethodEdDSA.Alg():
		return Admission{}, invalid("fast path: alg " + h.Alg)
	case h.Crit != nil:
		return Admission{}, invalid("crit header not supported")
	}
	if _, ok := snap.pubs[h.Kid]; !ok {
		return Admission{}, invalid(fmt.Sprintf("unknown kid %q", h.Kid))
	}
	praw, err := unb64(p64)
	if err != nil {
		return Admission{}, invalid(err)
	}
	var c admissionClaims
	dec := json.NewDecoder(bytes.NewReader(praw))
	if err := dec.Decode(&c); err != nil {
		return Admission{}, invalid(err)
	}
	v := jwt.NewValidator(
		jwt.WithIssuer(i.issuer),
		jwt.WithAudience(i.audience),
		jwt.WithExpirationRequired(),
		jwt.WithNotBeforeRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(i.leeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if err := v.Validate(c); err != nil {
		return Admission{}, invalid(err)
	}
	return i.admissionOf(&c, event)
}

func (i *Issuer) admissionOf(c *admissionClaims, event string) (Admission, error) {
	if c.Event != event {
		return Admission{}, fmt.Errorf("%w: admission for event %q", ErrWrongEvent, c.Event)
	}
	return Admission{
		Event: c.Event, User: c.Subject, Pos: *c.Pos, ID: c.ID,
		IssuedAt:  c.IssuedAt.UTC(),
		NotBefore: c.NotBefore.UTC(),
		ExpiresAt: c.ExpiresAt.UTC(),
	}, nil
}
