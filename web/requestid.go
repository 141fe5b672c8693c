package web

import (
	"crypto/rand"
	"net/netip"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Request ids. Every request gets one, answered in X-Request-ID, logged
// with its access-log line and shown in problem+json bodies, so that an
// operator can find a client's failed request. An id is 26 characters of
// base32 from crypto/rand (rand.Text, 128 bits): it reveals neither the
// request count nor the process, and cannot be guessed. A client's own
// X-Request-ID is kept only when the peer is a trusted proxy (which passes
// on the id it logged) and the id is 1 to 64 characters of A-Z a-z 0-9
// . _ : -; otherwise it is replaced, so no client can forge or inject
// log lines under another request's id.

// requestIDKey is the Locals key of the request id.
type requestIDKey struct{}

// maxRequestIDLen bounds a request id kept from a trusted proxy.
const maxRequestIDLen = 64

// assignRequestID is the middleware giving each request its id.
func (s *Server) assignRequestID(c *fiber.Ctx) error {
	id := ""
	if v := c.Get(fiber.HeaderXRequestID); v != "" && validRequestID(v) && s.edge.proxies.trustsPeer(c) {
		id = strings.Clone(v) // kept in Locals and logs past fiber's buffers
	}
	if id == "" {
		id = rand.Text()
	}
	c.Set(fiber.HeaderXRequestID, id)
	c.Locals(requestIDKey{}, id)
	return c.Next()
}

// requestID returns the request's id, or "" before assignRequestID ran.
func requestID(c *fiber.Ctx) string {
	v, _ := c.Locals(requestIDKey{}).(string)
	return v
}

// validRequestID reports whether id is short and made of safe characters
// only (nothing a log line or a header could be broken with).
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch b := id[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '.', b == '_', b == ':', b == '-':
		default:
			return false
		}
	}
	return true
}

// trustsPeer reports whether the request's peer (not X-Forwarded-For) is a
// trusted proxy.
func (p proxies) trustsPeer(c *fiber.Ctx) bool {
	if len(p) == 0 {
		return false
	}
	peer, ok := netip.AddrFromSlice(c.Context().RemoteIP())
	return ok && p.trusts(peer)
}
