package lists

import (
	"unsafe"

	"github.com/dchest/siphash"
)

// sipHash is SipHash-2-4 (Aumasson and Bernstein) of msg under the 128-bit
// key k0, k1 (the key's two little-endian halves): the keyed hash every
// entry of a list of ids is. Without the key nobody can compute which
// hashes stand for which ids, nor forge an id that lands on a listed hash.
func sipHash(k0, k1 uint64, msg string) uint64 {
	// siphash.Hash neither keeps nor writes its slice (go:noescape): the
	// string's bytes are read in place, without a copy per check.
	return siphash.Hash(k0, k1, unsafe.Slice(unsafe.StringData(msg), len(msg)))
}
