package tokens

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testSecret returns 32 fixed bytes, different for each seed.
func testSecret(seed byte) []byte {
	s := make([]byte, 32)
	for i := range s {
		s[i] = seed + byte(i)
	}
	return s
}

// craft signs claims with method and key, after applying header changes
// (a nil value deletes the header). It lets tests build tokens the package
// itself would never issue.
func craft(t testing.TB, method jwt.SigningMethod, key any, header map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range header {
		if v == nil {
			delete(tok.Header, k)
		} else {
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("craft token: %v", err)
	}
	return s
}

// unsigned builds an alg "none" token by hand.
func unsigned(header, claims string) string {
	return b64([]byte(header)) + "." + b64([]byte(claims)) + "."
}

// without returns a copy of m without key (or an unchanged copy for "").
func without(m jwt.MapClaims, key string) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// with returns a copy of m with key set to v.
func with(m jwt.MapClaims, key string, v any) jwt.MapClaims {
	out := without(m, key)
	out[key] = v
	return out
}

// randomBytes returns n random bytes as a string.
func randomBytes(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkErr reports whether err matches want (nil meaning success).
func checkErr(t testing.TB, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Errorf("got error %v, want success", err)
	case want != nil && !errors.Is(err, want):
		t.Errorf("got error %v, want %v", err, want)
	}
}

// t0 returns the fixed instant tests count from.
func t0() time.Time { return time.Date(2026, 3, 14, 9, 26, 53, 589793238, time.UTC) }

// sloppy re-encodes the last segment of a token with a non-zero unused low
// bit in its final base64url character: the same bytes to a lenient
// decoder, a different string. Strict decoding must refuse it, or one token
// would have several spellings (and dodge per-token rate limits).
func sloppy(t testing.TB, raw string) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.LastIndexByte(raw, '.')
	seg := raw[i+1:]
	if len(seg)%4 == 0 {
		t.Fatalf("sloppy: segment of %d characters has no unused bits", len(seg))
	}
	c := strings.IndexByte(alphabet, seg[len(seg)-1])
	out := raw[:len(raw)-1] + string(alphabet[c^1])
	a, errA := base64.RawURLEncoding.DecodeString(seg)
	b, errB := base64.RawURLEncoding.DecodeString(out[i+1:])
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Fatalf("sloppy: %q and %q should decode leniently to the same bytes", seg, out[i+1:])
	}
	return out
}
