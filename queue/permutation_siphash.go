package queue

import "math/bits"

// SipHash-2-4 initialisation constants: "somepseudorandomlygeneratedbytes".
const (
	permSipC0 = 0x736f6d6570736575
	permSipC1 = 0x646f72616e646f6d
	permSipC2 = 0x6c7967656e657261
	permSipC3 = 0x7465646279746573
)

// permSipHash returns SipHash-2-4 with key (k0, k1) of the 8-byte big-endian
// encoding of h: the round function of Permutation before masking.
//
// SipHash reads its key and message as little-endian 64-bit words, so k0 and
// k1 are the little-endian words of the 16 key bytes, and the single message
// word is h with its bytes reversed. An 8-byte message is exactly one block,
// followed by the final block holding only the length, 8, in its top byte.
func permSipHash(k0, k1, h uint64) uint64 {
	v0, v1, v2, v3 := k0^permSipC0, k1^permSipC1, k0^permSipC2, k1^permSipC3

	m := bits.ReverseBytes64(h)
	v3 ^= m
	v0, v1, v2, v3 = permSipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = permSipRound(v0, v1, v2, v3)
	v0 ^= m

	const last = 8 << 56
	v3 ^= last
	v0, v1, v2, v3 = permSipRound(v0, v1, v2, v3)
	v0, v1, v2, v3 = permSipRound(v0, v1, v2, v3)
	v0 ^= last

	v2 ^= 0xff
	for range 4 {
		v0, v1, v2, v3 = permSipRound(v0, v1, v2, v3)
	}
	return v0 ^ v1 ^ v2 ^ v3
}

// permSipRound is one SipRound.
func permSipRound(v0, v1, v2, v3 uint64) (uint64, uint64, uint64, uint64) {
	v0 += v1
	v1 = bits.RotateLeft64(v1, 13)
	v1 ^= v0
	v0 = bits.RotateLeft64(v0, 32)
	v2 += v3
	v3 = bits.RotateLeft64(v3, 16)
	v3 ^= v2
	v0 += v3
	v3 = bits.RotateLeft64(v3, 21)
	v3 ^= v0
	v2 += v1
	v1 = bits.RotateLeft64(v1, 17)
	v1 ^= v2
	v2 = bits.RotateLeft64(v2, 32)
	return v0, v1, v2, v3
}
