package kit

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Proxies is the set of trusted proxies (web.Config.TrustedProxies).
type Proxies []netip.Prefix

// ParseProxies reads addresses ("10.0.0.1") and CIDR ranges
// ("10.0.0.0/8"). It returns the first entry it cannot read.
func ParseProxies(list []string) (Proxies, string) {
	var out Proxies
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, s
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, ""
}

// ValidTrustedProxies returns an error naming the first entry of list that
// is neither an IP address nor a CIDR range.
func ValidTrustedProxies(list []string) error {
	if _, bad := ParseProxies(list); bad != "" {
		return fmt.Errorf("trusted proxy %q: want an IP address or a CIDR range", bad)
	}
	return nil
}

// Trusts reports whether a is one of the trusted proxies.
func (p Proxies) Trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, pr := range p {
		if pr.Contains(a) {
			return true
		}
	}
	return false
}

// ClientIP is the address the limits count: the peer's, unless the peer is
// a trusted proxy. Then it is the rightmost X-Forwarded-For entry that is
// not itself a trusted proxy: proxies append the address they saw, so
// everything left of that entry was written by the client and may be
// forged; several header lines are first joined into one list. (fiber's
// own ProxyHeader takes the leftmost entry, which a client behind an
// appending load balancer chooses freely; so the edge does not set it.)
// An entry that is not an address ends the walk at the last
// trusted hop.
func (p Proxies) ClientIP(c *fiber.Ctx) string {
	a := p.ClientAddr(c)
	if !a.IsValid() {
		return c.Context().RemoteIP().String()
	}
	return a.String()
}

// ClientAddr is ClientIP's address, unmapped (an IPv4 address as
// itself); the zero Addr when the peer's is not an IP address. It
// allocates only to join several X-Forwarded-For lines of a trusted
// proxy.
func (p Proxies) ClientAddr(c *fiber.Ctx) netip.Addr {
	peer, ok := netip.AddrFromSlice(c.Context().RemoteIP())
	if !ok {
		return netip.Addr{}
	}
	peer = peer.Unmap()
	if len(p) == 0 || !p.Trusts(peer) {
		return peer
	}
	// Several X-Forwarded-For lines are one list, in order (RFC 9110
	// 5.3): a client's own line first cannot hide the proxy's last one.
	var xff string
	for i, line := range c.Request().Header.PeekAll(fiber.HeaderXForwardedFor) {
		if i > 0 {
			xff += ","
		}
		xff += string(line)
	}
	for xff != "" {
		var entry string
		if i := strings.LastIndexByte(xff, ','); i >= 0 {
			xff, entry = xff[:i], xff[i+1:]
		} else {
			xff, entry = "", xff
		}
		a, err := netip.ParseAddr(strings.TrimSpace(entry))
		if err != nil {
			if host, _, herr := net.SplitHostPort(strings.TrimSpace(entry)); herr == nil {
				a, err = netip.ParseAddr(host)
			}
		}
		if err != nil {
			break
		}
		if a = a.Unmap(); !p.Trusts(a) {
			return a
		}
		peer = a
	}
	return peer
}
