package staffapi

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSessionCookie(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	key := consoleKey("admin-token-0123456789")
	sess, err := newConsoleSession(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	raw := sess.encode(key)
	if got, ok := parseConsoleSession(key, raw, now.Add(59*time.Minute)); !ok || got.nonce != sess.nonce {
		t.Fatalf("parse of a fresh cookie: got %+v %v, want the session", got, ok)
	}
	nonce, rest, _ := strings.Cut(raw, ".")
	exp, sig, _ := strings.Cut(rest, ".")
	later := strconv.FormatInt(sess.expires.Unix()+86400, 10)
	flip := func(s string) string {
		b := []byte(s)
		b[len(b)/2] ^= 1
		return string(b)
	}
	cases := []struct {
		name string
		key  []byte
		raw  string
		at   time.Time
	}{
		{"expired", key, raw, now.Add(time.Hour)},
		{"another admin token", consoleKey("another-token-0123456789"), raw, now},
		{"forged nonce", key, flip(nonce) + "." + exp + "." + sig, now},
		{"extended expiry", key, nonce + "." + later + "." + sig, now},
		{"forged mac", key, nonce + "." + exp + "." + flip(sig), now},
		{"no mac", key, nonce + "." + exp, now},
		{"empty", key, "", now},
		{"huge", key, strings.Repeat("a", 500), now},
	}
	for _, tc := range cases {
		if _, ok := parseConsoleSession(tc.key, tc.raw, tc.at); ok {
			t.Errorf("%s: accepted, want refused", tc.name)
		}
	}
	if a, b := sess.csrf(key), sess.csrf(consoleKey("another-token-0123456789")); a == b || len(a) < 40 {
		t.Errorf("csrf tokens %q and %q: want distinct per key and 256 bits", a, b)
	}
}

// TestSessionCookieAccount: an account's cookie carries its incarnation,
// signed; names may hold dots; a cookie of the format without an
// incarnation reads with none.
func TestSessionCookieAccount(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	key := consoleKey("admin-token-0123456789")
	sess, err := newConsoleSession(now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sess.account, sess.gen = "o.l-g_a", "AAAAAAAAAAAAAAAAAAAAAA"
	raw := sess.encode(key)
	if got, ok := parseConsoleSession(key, raw, now); !ok || got.nonce != sess.nonce || got.account != sess.account || got.gen != sess.gen || !got.expires.Equal(sess.expires) {
		t.Fatalf("parse = %+v %v, want %+v", got, ok, sess)
	}
	if _, ok := parseConsoleSession(key, strings.Replace(raw, sess.gen, "BAAAAAAAAAAAAAAAAAAAAA", 1), now); ok {
		t.Error("a cookie with another incarnation was accepted")
	}
	if _, ok := parseConsoleSession(key, strings.Replace(raw, ".o.l-g_a.", ".ada.", 1), now); ok {
		t.Error("a cookie with another account was accepted")
	}
	exp := strconv.FormatInt(sess.expires.Unix(), 10)
	legacy := sess.nonce + "." + exp + ".olga." + mac(key, "session", sess.nonce, exp, "olga")
	if got, ok := parseConsoleSession(key, legacy, now); !ok || got.account != "olga" || got.gen != "" {
		t.Errorf("a cookie without an incarnation = %+v %v, want olga with none", got, ok)
	}
}
