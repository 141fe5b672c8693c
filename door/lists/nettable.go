package lists

import (
	"encoding/binary"
	"net/netip"
	"slices"
)

// netTable is a network list as sorted, disjoint address ranges: an exact
// membership test by binary search. IPv4 ranges are uint32 pairs, IPv6
// ranges pairs of 128-bit numbers (hi, lo).
type netTable struct {
	v4 []uint32 // start, end, start, end, ... ascending, disjoint
	v6 []u128   // likewise
	// i4 and i6 narrow a search to the few ranges of an address's
	// bucket (by its top bits: the whole IPv4 address, an IPv6
	// address's first 64), so a check touches a cache line or two, not
	// the 23 of a binary search over ten million ranges.
	i4, i6 rangeIndex
}

// rangeIndex maps a key's bucket, (key - lo) >> shift, to the ranges
// that may hold it: from first[b] to first[b+1] (inclusive), where
// first[b] is the first range whose end is at or after the bucket's
// first key.
type rangeIndex struct {
	lo    uint64
	shift uint
	first []uint32
}

// newRangeIndex indexes n ranges whose first keys are start(i) and last
// keys end(i) (ascending, disjoint), about two ranges a bucket.
func newRangeIndex(n int, start, end func(i int) uint64) rangeIndex {
	if n == 0 {
		return rangeIndex{}
	}
	nb := 1
	for nb < n/2 {
		nb <<= 1
	}
	lo, span := start(0), end(n-1)-start(0)
	shift := uint(0)
	for shift < 64 && span>>shift >= uint64(nb) {
		shift++
	}
	x := rangeIndex{lo: lo, shift: shift, first: make([]uint32, nb+1)}
	i := 0
	for b := 0; b <= nb; b++ {
		// b << shift overflows only past the last bucket, which no key
		// reaches: every later range is "after".
		at := lo + uint64(b)<<shift
		if b > 0 && uint64(b)<<shift>>shift != uint64(b) || at < lo {
			x.first[b] = uint32(n)
			continue
		}
		for i < n && end(i) < at {
			i++
		}
		x.first[b] = uint32(i)
	}
	return x
}

// bounds are the ranges [from, to] that may hold key; ok is false when
// none may.
func (x *rangeIndex) bounds(key uint64, n int) (from, to int, ok bool) {
	if x.first == nil || key < x.lo {
		return 0, 0, false
	}
	b := (key - x.lo) >> x.shift
	if b >= uint64(len(x.first)-1) {
		return 0, 0, false
	}
	return int(x.first[b]), min(int(x.first[b+1]), n-1), true
}

type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

func (a u128) cmp(b u128) int {
	switch {
	case a.less(b):
		return -1
	case b.less(a):
		return 1
	}
	return 0
}

// next is a + 1 and whether it did not wrap.
func (a u128) next() (u128, bool) {
	if a.lo != ^uint64(0) {
		return u128{a.hi, a.lo + 1}, true
	}
	if a.hi != ^uint64(0) {
		return u128{a.hi + 1, 0}, true
	}
	return u128{}, false
}

// newNetTable builds the table of networks ps.
func newNetTable(ps []netip.Prefix) *netTable {
	var r4 [][2]uint32
	var r6 [][2]u128
	for _, p := range ps {
		a := p.Addr()
		if a.Is4() {
			b := a.As4()
			start := binary.BigEndian.Uint32(b[:])
			host := uint32(0)
			if p.Bits() < 32 {
				host = ^uint32(0) >> p.Bits()
			}
			r4 = append(r4, [2]uint32{start, start | host})
			continue
		}
		b := a.As16()
		start := u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
		end := start
		switch bits := p.Bits(); {
		case bits == 0:
			end = u128{^uint64(0), ^uint64(0)}
		case bits < 64:
			end = u128{start.hi | ^uint64(0)>>bits, ^uint64(0)}
		case bits < 128:
			end = u128{start.hi, start.lo | ^uint64(0)>>(bits-64)}
		}
		r6 = append(r6, [2]u128{start, end})
	}
	t := &netTable{}
	slices.SortFunc(r4, func(a, b [2]uint32) int {
		switch {
		case a[0] < b[0]:
			return -1
		case a[0] > b[0]:
			return 1
		}
		return 0
	})
	for _, r := range r4 {
		if n := len(t.v4); n > 0 && (t.v4[n-1] == ^uint32(0) || r[0] <= t.v4[n-1]+1) {
			t.v4[n-1] = max(t.v4[n-1], r[1])
			continue
		}
		t.v4 = append(t.v4, r[0], r[1])
	}
	slices.SortFunc(r6, func(a, b [2]u128) int { return a[0].cmp(b[0]) })
	for _, r := range r6 {
		if n := len(t.v6); n > 0 {
			last := t.v6[n-1]
			after, ok := last.next()
			if !ok || !after.less(r[0]) { // overlapping or adjacent
				if last.less(r[1]) {
					t.v6[n-1] = r[1]
				}
				continue
			}
		}
		t.v6 = append(t.v6, r[0], r[1])
	}
	t.i4 = newRangeIndex(len(t.v4)/2, func(i int) uint64 { return uint64(t.v4[2*i]) }, func(i int) uint64 { return uint64(t.v4[2*i+1]) })
	t.i6 = newRangeIndex(len(t.v6)/2, func(i int) uint64 { return t.v6[2*i].hi }, func(i int) uint64 { return t.v6[2*i+1].hi })
	return t
}

// has reports whether a is in one of the table's networks.
func (t *netTable) has(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		x := binary.BigEndian.Uint32(b[:])
		n := len(t.v4) / 2
		// the first range whose end is >= x, among those of x's bucket
		lo, hi, ok := t.i4.bounds(uint64(x), n)
		if !ok {
			return false
		}
		hi++
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if t.v4[2*m+1] < x {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo < n && t.v4[2*lo] <= x
	}
	if !a.Is6() {
		return false
	}
	b := a.As16()
	x := u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
	n := len(t.v6) / 2
	lo, hi, ok := t.i6.bounds(x.hi, n)
	if !ok {
		return false
	}
	hi++
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.v6[2*m+1].less(x) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < n && !x.less(t.v6[2*lo])
}

// bytes is the table's memory.
func (t *netTable) bytes() int {
	return 4*cap(t.v4) + 16*cap(t.v6) + 4*cap(t.i4.first) + 4*cap(t.i6.first)
}
