package tokens

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"strings"
)

// Lengths of a visitor cookie: 16 random bytes and a 16-byte truncated
// HMAC, each unpadded base64url (22 characters), joined by a dot.
const (
	visitorIDLen     = 22
	visitorCookieLen = 2*visitorIDLen + 1
)

// Visitors signs and verifies anonymous visitor ids
// (ANTEROOM_IDENTITY=anonymous). An id is 16 random bytes in base64url; the
// cookie value is id + "." + base64url(HMAC-SHA256(secret, id) truncated to
// 16 bytes). The id alone is the visitor's identity; the MAC only proves
// this deployment handed it out.
//
// The secret may be the ticket secret: no ticket's HMAC input (which always
// contains a dot) equals a visitor id (which never does). A *Visitors is safe
// for concurrent use. The zero value is not usable; call [NewVisitors].
type Visitors struct {
	secret []byte
}

// NewVisitors returns a Visitors using secret, which must be at least
// [MinSecretLen] bytes. The secret is copied.
func NewVisitors(secret []byte) (*Visitors, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("tokens: visitor secret is %d bytes, want at least %d", len(secret), MinSecretLen)
	}
	return &Visitors{secret: append([]byte(nil), secret...)}, nil
}

// New returns a fresh random visitor id and its signed cookie value.
func (v *Visitors) New() (id, cookie string, err error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("tokens: visitor id: %w", err)
	}
	id = b64(b[:])
	return id, id + "." + v.mac(id), nil
}

// Verify checks a cookie value and returns the visitor id it carries, or an
// error wrapping [ErrInvalid].
func (v *Visitors) Verify(cookie string) (id string, err error) {
	if len(cookie) != visitorCookieLen {
		return "", invalid("visitor cookie of wrong length")
	}
	id, mac, ok := strings.Cut(cookie, ".")
	if !ok || len(id) != visitorIDLen {
		return "", invalid("visitor cookie without id")
	}
	if raw, err := unb64(id); err != nil || len(raw) != 16 {
		return "", invalid("visitor id is not base64url")
	}
	if !hmac.Equal([]byte(mac), []byte(v.mac(id))) {
		return "", invalid("visitor cookie signature mismatch")
	}
	return id, nil
}

func (v *Visitors) mac(id string) string {
	h := hmac.New(sha256.New, v.secret)
	h.Write([]byte(id))
	return b64(h.Sum(nil)[:16])
}

// String redacts the secret.
func (v *Visitors) String() string { return "tokens.Visitors{secret: redacted}" }

// LogValue redacts the secret.
func (v *Visitors) LogValue() slog.Value { return slog.StringValue(v.String()) }
