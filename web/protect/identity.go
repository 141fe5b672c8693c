package protect

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// validUser reports whether a user id is acceptable: 1 to 128 printable
// ASCII characters without spaces.
func validUser(u string) bool {
	if len(u) == 0 || len(u) > 128 {
		return false
	}
	for i := 0; i < len(u); i++ {
		if u[i] < 0x21 || u[i] > 0x7e {
			return false
		}
	}
	return true
}

// oneHeader returns the value of the request header name, "" when absent.
// A request that carries the header on several lines is answered 400: an
// identity is one value, never "the first one" (a client could prepend its
// own line in front of the one a gateway appends). The value is copied.
func oneHeader(c *fiber.Ctx, name string) (string, error) {
	all := c.Request().Header.PeekAll(name) // valid until the next Peek
	switch len(all) {
	case 0:
		return "", nil
	case 1:
		return string(all[0]), nil
	}
	return "", kit.BadRequest("the %s header must be sent once; this request has %d", name, len(all))
}

// HeaderIdentity believes a user id set by a gateway in front of anteroom
// (ANTEROOM_IDENTITY=header), but only on requests whose direct peer is
// one of the trusted proxies: from any other peer the request is refused
// 401 unauthenticated, with or without the header, so a client that
// reaches a node around the gateway cannot name itself. A header sent on
// several lines is 400; a missing or unusable value is 401.
//
// The zero value trusts no peer and so refuses every request; build one
// with NewHeaderIdentity. A HeaderIdentity is safe for concurrent use.
type HeaderIdentity struct {
	// Header carries the user id.
	//
	// Default: X-User-ID
	Header string
	// trusted are the direct peers whose Header is believed.
	trusted kit.Proxies
}

// NewHeaderIdentity returns the header mode believing header (default
// X-User-ID) from direct peers within trusted (addresses or CIDR ranges,
// as Config.TrustedProxies). It fails on an entry it cannot read or when
// trusted is empty: a header mode that believes nobody names nobody.
func NewHeaderIdentity(header string, trusted []string) (HeaderIdentity, error) {
	p, bad := kit.ParseProxies(trusted)
	if bad != "" {
		return HeaderIdentity{}, fmt.Errorf("trusted proxy %q: want an IP address or a CIDR range", bad)
	}
	if len(p) == 0 {
		return HeaderIdentity{}, fmt.Errorf("identity header believes %s only from trusted proxies: set ANTEROOM_TRUSTED_PROXIES to your gateway's addresses, or use identity anonymous or jwt", headerOr(header))
	}
	return HeaderIdentity{Header: header, trusted: p}, nil
}

// UserIDHeader is the header mode's default user id header.
const UserIDHeader = "X-User-ID"

func headerOr(name string) string {
	if name == "" {
		return UserIDHeader
	}
	return name
}

// User returns the header's user id when the request came from a trusted
// proxy. mint is ignored: the gateway names the caller or nobody does.
func (h HeaderIdentity) User(c *fiber.Ctx, _ bool) (string, error) {
	name := headerOr(h.Header)
	peer, ok := netip.AddrFromSlice(c.Context().RemoteIP())
	if !ok || !h.trusted.Trusts(peer) {
		return "", kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated",
			name+" is believed only from a trusted proxy (ANTEROOM_TRUSTED_PROXIES); come through the shop's gateway")
	}
	u, err := oneHeader(c, name)
	if err != nil {
		return "", err
	}
	u = strings.TrimSpace(u)
	if u == "" {
		return "", kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "missing "+name+" header")
	}
	if !validUser(u) {
		return "", kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", name+" must be 1 to 128 printable characters without spaces")
	}
	return u, nil // oneHeader copied it
}
