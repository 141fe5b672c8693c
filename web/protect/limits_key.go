package protect

import "net/netip"

// limiterIP is the value the per-IP limits count for a client address:
// an IPv4 address itself, an IPv6 address its /64. One IPv6 host or
// household is handed a whole /64 and may use any address in it, so
// counting single IPv6 addresses would give it 2^64 budgets. An
// IPv4-mapped IPv6 address counts as its IPv4 address; a value that is
// not an address is counted as it is.
func limiterIP(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return ip
	}
	return p.String()
}
