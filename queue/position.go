package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// permSeedBytes is the length in bytes of an event seed.
const permSeedBytes = 32

// Position returns the queue position of sequence number seq, given the
// permutation p of the frozen window. p.Size() is the window size W; the
// zero Permutation (W = 0) means there is no window, or it is not frozen
// yet, and the position is seq.
//
// Window members (1 <= seq <= W) get p.Apply(seq), a position in 1..W; later
// joiners (seq > W) keep position seq, behind the whole window. Position
// returns 0 for seq < 1. 0 is never a position: a caller must treat it as
// an error and never compare it with the frontier, which starts at 0.
//
// In lottery mode the window is the whole registration set and Position is
// the draw order.
func Position(p Permutation, seq int64) int64 {
	switch {
	case seq < 1:
		return 0
	case seq <= p.Size():
		return p.Apply(seq)
	default:
		return seq
	}
}

// ParseSeedHex decodes a seed published as exactly 64 lowercase hex
// characters (32 bytes). It returns an error for any other length, for
// characters outside 0-9a-f (uppercase included: the published form is
// canonical), or for an empty string. The error never quotes the input,
// which is a secret until the window closes.
func ParseSeedHex(s string) ([]byte, error) {
	if len(s) != 2*permSeedBytes {
		return nil, fmt.Errorf("queue: seed is %d hex characters, want %d", len(s), 2*permSeedBytes)
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return nil, fmt.Errorf("queue: seed character %d is not lowercase hex", i+1)
		}
	}
	seed, err := hex.DecodeString(s)
	if err != nil {
		// Unreachable after the checks above; kept so a bug cannot pass.
		return nil, fmt.Errorf("queue: seed: %w", err)
	}
	return seed, nil
}

// Commitment returns the seed commitment published before anyone joins: the
// lowercase hex SHA-256 of the seed bytes (not of their hex form).
func Commitment(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}
