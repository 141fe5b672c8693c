package lists

import (
	"encoding/binary"
	"math/bits"
)

// sipHash is SipHash-2-4 (Aumasson and Bernstein) of msg under the 128-bit
// key k0, k1 (the key's two little-endian halves): the keyed hash every
// entry of a list of ids is. Without the key nobody can compute which
// hashes stand for which ids, nor forge an id that lands on a listed hash.
func sipHash(k0, k1 uint64, msg string) uint64 {
	v0 := k0 ^ 0x736f6d6570736575
	v1 := k1 ^ 0x646f72616e646f6d
	v2 := k0 ^ 0x6c7967656e657261
	v3 := k1 ^ 0x7465646279746573
	round := func() {
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
	}
	n := len(msg)
	for len(msg) >= 8 {
		m := uint64(msg[0]) | uint64(msg[1])<<8 | uint64(msg[2])<<16 | uint64(msg[3])<<24 |
			uint64(msg[4])<<32 | uint64(msg[5])<<40 | uint64(msg[6])<<48 | uint64(msg[7])<<56
		v3 ^= m
		round()
		round()
		v0 ^= m
		msg = msg[8:]
	}
	var last [8]byte
	copy(last[:], msg)
	last[7] = byte(n)
	m := binary.LittleEndian.Uint64(last[:])
	v3 ^= m
	round()
	round()
	v0 ^= m
	v2 ^= 0xff
	round()
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}
