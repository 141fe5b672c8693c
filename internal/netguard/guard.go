// Package netguard keeps the node from dialling where others point it.
// Staff give the node URLs (a sale's shop health URL, its webhooks) and
// browsers give it Web Push endpoints; the node then connects from inside
// the operator's network, where a URL naming a loopback, private,
// link-local or metadata address (http://169.254.169.254/ answers cloud
// credentials) would reach what the internet cannot.
//
// A Policy judges the address actually dialled: Control runs in
// net.Dialer.Control, after name resolution, for every connection, so it
// holds whatever a name resolves to (DNS rebinding included) and for
// every redirect a client follows. By default (the zero Policy) every
// non-public address is refused; the operator allows chosen networks by
// name (ANTEROOM_ALLOW_PRIVATE_TARGETS). Class names a failed request's
// cause coarsely, for what staff see: the dial error's text stays in the
// node.
package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// ErrRefused is the error of a dial to an address the Policy refuses
// (wrapped in the dialer's *net.OpError; match it with errors.Is).
var ErrRefused = errors.New("netguard: refused target")

// Policy says which addresses may be dialled: every public address, and
// the non-public ones in its allowed networks. The zero value allows no
// non-public address. A Policy is immutable: safe for concurrent use.
type Policy struct {
	allow []netip.Prefix
}

// refused are the networks no URL given to the node may reach unless
// allowed: besides what netip classifies (loopback, RFC 1918 and fc00::/7
// private, link-local, multicast, unspecified), these ranges.
var refused = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),          // IPv4-compatible (deprecated), :: and ::1
	netip.MustParsePrefix("fec0::/10"),      // site-local (deprecated)
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
}

// Allow returns a Policy that also allows the networks in list, each a
// CIDR ("10.1.0.0/16", "fd00:1::/64") or a single address ("127.0.0.1").
// An empty list is the default Policy.
func Allow(list []string) (Policy, error) {
	var p Policy
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "/") {
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" {
				return Policy{}, fmt.Errorf("private target %q: want a CIDR such as 10.1.0.0/16 or an address", s)
			}
			a = a.Unmap()
			p.allow = append(p.allow, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		n, err := netip.ParsePrefix(s)
		if err != nil {
			return Policy{}, fmt.Errorf("private target %q: want a CIDR such as 10.1.0.0/16 or an address", s)
		}
		if n.Addr().Is4In6() && n.Bits() >= 96 {
			n = netip.PrefixFrom(n.Addr().Unmap(), n.Bits()-96)
		}
		p.allow = append(p.allow, n.Masked())
	}
	return p, nil
}

// Check returns nil if ip may be dialled, else an error wrapping
// ErrRefused. An IPv4-mapped IPv6 address is judged as its IPv4 address,
// and the IPv4 address inside a NAT64 (64:ff9b::/96) or 6to4 (2002::/16)
// address too.
func (p Policy) Check(ip netip.Addr) error {
	ip = ip.WithZone("").Unmap()
	for _, n := range p.allow {
		if n.Contains(ip) {
			return nil
		}
	}
	if !public(ip) {
		return fmt.Errorf("%w: %s is not a public address", ErrRefused, ip)
	}
	if v4, ok := embedded(ip); ok && p.Check(v4) != nil {
		return fmt.Errorf("%w: %s holds %s, not a public address", ErrRefused, ip, v4)
	}
	return nil
}

// Control is a net.Dialer.Control function: it refuses a connection to an
// address p does not allow, before the connection is made.
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an address", ErrRefused, address)
	}
	return p.Check(ap.Addr())
}

// public reports whether ip is a global unicast address outside the
// refused ranges.
func public(ip netip.Addr) bool {
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || !ip.IsGlobalUnicast() {
		return false
	}
	for _, n := range refused {
		if n.Contains(ip) {
			return false
		}
	}
	return true
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// embedded returns the IPv4 address a NAT64 or 6to4 address carries.
func embedded(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case !ip.Is6():
		return netip.Addr{}, false
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// Loopback lists the loopback networks, for Allow: what tests, whose
// endpoints listen on loopback, allow by name.
var Loopback = []string{"127.0.0.0/8", "::1/128"}
