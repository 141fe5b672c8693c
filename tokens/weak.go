package tokens

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrWeakSecret is wrapped by [CheckSecret] and [CheckAdminToken] when a
// configured secret is short, patterned, low in entropy or a placeholder
// shipped with anteroom.
var ErrWeakSecret = errors.New("tokens: weak secret")

// MinAdminTokenLen is the shortest admin token [CheckAdminToken] accepts.
const MinAdminTokenLen = 24

// Placeholders are the example secrets and tokens shipped in anteroom's
// repository (deploy files, README, old compose defaults). A node refuses
// every one of them: they are public. Compared case-insensitively, hex
// secrets in their hex spelling.
var Placeholders = []string{
	"compose-admin-token-change-me",
	"REPLACE-with-openssl-rand-hex-24",
	"REPLACE-with-64-hex-digits-from-openssl-rand-hex-32",
	strings.Repeat("0", 64), // the old compose default
}

// placeholderWords mark a value someone meant to replace.
var placeholderWords = []string{"changeme", "change-me", "change_me", "replace-with", "replace_me", "placeholder"}

// minDistinctBytes is the fewest distinct byte values CheckSecret accepts
// among a secret's first 32 bytes. 32 bytes from crypto/rand hold about 30
// distinct values; fewer than 16 happens with probability below 1e-20.
const minDistinctBytes = 16

// CheckSecret returns an error wrapping [ErrWeakSecret] when secret, an
// HMAC key such as the ticket secret, is shorter than [MinSecretLen],
// repeats one byte (all zeros), repeats a pattern of up to 8 bytes, counts
// up or down by a fixed step, has fewer than 16 distinct byte values in its
// first 32 bytes, or is one of [Placeholders]. 32 bytes from crypto/rand
// (`openssl rand -hex 32`) pass. The error never contains the secret.
func CheckSecret(secret []byte) error {
	if len(secret) < MinSecretLen {
		return fmt.Errorf("%w: %d bytes, want at least %d random bytes (openssl rand -hex 32)", ErrWeakSecret, len(secret), MinSecretLen)
	}
	if isPlaceholder(hex.EncodeToString(secret)) {
		return fmt.Errorf("%w: it is an example value published in anteroom's repository", ErrWeakSecret)
	}
	for period := 1; period <= 8; period++ {
		if periodic(secret, period) {
			return fmt.Errorf("%w: it repeats a pattern of %d byte(s)", ErrWeakSecret, period)
		}
	}
	if progression(secret) {
		return fmt.Errorf("%w: its bytes count by a fixed step", ErrWeakSecret)
	}
	if n := distinct(secret[:32]); n < minDistinctBytes {
		return fmt.Errorf("%w: only %d distinct byte values in its first 32 bytes; use 32 random bytes (openssl rand -hex 32)", ErrWeakSecret, n)
	}
	return nil
}

// CheckAdminToken returns an error wrapping [ErrWeakSecret] when token is
// shorter than [MinAdminTokenLen] characters, uses fewer than 8 distinct
// characters, repeats a pattern of up to 8 characters, or is or contains a
// placeholder ("change-me", one of [Placeholders]). `openssl rand -hex 24`
// passes. The error never contains the token.
func CheckAdminToken(token string) error {
	if len(token) < MinAdminTokenLen {
		return fmt.Errorf("%w: the admin token has %d characters, want at least %d (openssl rand -hex 24)", ErrWeakSecret, len(token), MinAdminTokenLen)
	}
	if isPlaceholder(token) {
		return fmt.Errorf("%w: the admin token is an example value published in anteroom's repository", ErrWeakSecret)
	}
	for period := 1; period <= 8; period++ {
		if periodic([]byte(token), period) {
			return fmt.Errorf("%w: the admin token repeats a pattern of %d character(s)", ErrWeakSecret, period)
		}
	}
	if n := distinct([]byte(token)); n < 8 {
		return fmt.Errorf("%w: the admin token uses only %d distinct characters (openssl rand -hex 24)", ErrWeakSecret, n)
	}
	return nil
}

func isPlaceholder(s string) bool {
	for _, p := range Placeholders {
		if strings.EqualFold(s, p) {
			return true
		}
	}
	lower := strings.ToLower(s)
	for _, w := range placeholderWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// periodic reports whether b repeats its first period bytes throughout.
func periodic(b []byte, period int) bool {
	if len(b) <= period {
		return false
	}
	for i := period; i < len(b); i += period {
		if !bytes.Equal(b[i:min(i+period, len(b))], b[:min(period, len(b)-i)]) {
			return false
		}
	}
	return true
}

// progression reports whether every byte differs from the previous one
// by the same step (00 01 02 ..., ff fe fd ...).
func progression(b []byte) bool {
	step := b[1] - b[0]
	for i := 2; i < len(b); i++ {
		if b[i]-b[i-1] != step {
			return false
		}
	}
	return true
}

func distinct(b []byte) int {
	var seen [256]bool
	n := 0
	for _, c := range b {
		if !seen[c] {
			seen[c] = true
			n++
		}
	}
	return n
}
