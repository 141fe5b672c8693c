package queue

import (
	"encoding/binary"

	"github.com/dchest/siphash"
)

// permSipHash returns SipHash-2-4 with key (k0, k1) of the 8-byte big-endian
// encoding of h: the round function of Permutation before masking. SipHash
// reads its key as little-endian 64-bit words: k0 and k1 are the
// little-endian words of the 16 key bytes.
func permSipHash(k0, k1, h uint64) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], h)
	return siphash.Hash(k0, k1, b[:])
}
