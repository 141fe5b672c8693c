package lists

import (
	"net/netip"
	"strings"
	"unicode/utf8"
)

// Kind is what a list holds.
type Kind string

// The kinds of list.
const (
	// KindUser lists user ids (the id the caller's identity names).
	KindUser Kind = "user"
	// KindNetwork lists IPv4 and IPv6 networks (CIDR) and single
	// addresses.
	KindNetwork Kind = "network"
	// KindDevice lists device ids (package limit's signals).
	KindDevice Kind = "device"
	// KindPayment lists payment fingerprints (package limit's signals).
	KindPayment Kind = "payment"
)

// Kinds are the kinds of list, in the order staff see them.
var Kinds = []Kind{KindUser, KindNetwork, KindDevice, KindPayment}

// Valid reports whether k is one of Kinds.
func (k Kind) Valid() bool {
	for _, x := range Kinds {
		if k == x {
			return true
		}
	}
	return false
}

// ids reports whether a list of kind k holds keyed hashes of ids (every
// kind but KindNetwork).
func (k Kind) ids() bool { return k != KindNetwork }

// MaxValueBytes bounds one id (a user id, a device id, a payment
// fingerprint).
const MaxValueBytes = 512

// checkID validates an id: 1 to MaxValueBytes bytes of UTF-8 with no
// control characters.
func checkID(v string) error {
	switch {
	case v == "":
		return invalid("empty value")
	case len(v) > MaxValueBytes:
		return invalid("value longer than %d bytes", MaxValueBytes)
	case !utf8.ValidString(v):
		return invalid("value is not UTF-8")
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return invalid("value has a control character")
	}
	return nil
}

// ParseNetwork reads a network list's value: a CIDR ("10.0.0.0/8",
// "2001:db8::/32") or a single address, IPv4 or IPv6 (an IPv4-mapped IPv6
// address or network counts as IPv4), normalised to its masked prefix.
func ParseNetwork(v string) (netip.Prefix, error) {
	if strings.Contains(v, "/") {
		p, err := netip.ParsePrefix(v)
		if err != nil || p.Addr().Zone() != "" {
			return netip.Prefix{}, invalid("%q is not a network (CIDR) or address", v)
		}
		if a := p.Addr(); a.Is4In6() {
			if p.Bits() < 96 {
				return netip.Prefix{}, invalid("%q: an IPv4-mapped network needs at least 96 bits", v)
			}
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(v)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, invalid("%q is not a network (CIDR) or address", v)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// netRecordSize is the size of a network's record: its 16-byte address
// (IPv4 as IPv4-mapped IPv6) and its prefix length in those 128 bits.
const netRecordSize = 17

// netRecord is p's record.
func netRecord(p netip.Prefix) [netRecordSize]byte {
	var r [netRecordSize]byte
	a := p.Addr()
	b16 := a.As16()
	if a.Is4() {
		b16 = netip.AddrFrom16(b16).As16() // As16 of an IPv4 is IPv4-mapped
	}
	copy(r[:16], b16[:])
	bits := p.Bits()
	if a.Is4() {
		bits += 96
	}
	r[16] = byte(bits)
	return r
}

// netOfRecord is the network of record r.
func netOfRecord(r []byte) netip.Prefix {
	a := netip.AddrFrom16([16]byte(r[:16]))
	bits := int(r[16])
	if a.Is4In6() {
		return netip.PrefixFrom(a.Unmap(), bits-96)
	}
	return netip.PrefixFrom(a, bits)
}
