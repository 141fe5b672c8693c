package kit

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"net/netip"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// Request ids. Every request gets one, answered in X-Request-ID, logged
// with its access-log line and shown in problem+json bodies, so that an
// operator can find a client's failed request. An id is 26 characters of
// base32 (the alphabet of crypto/rand.Text, 130 bits) from a ChaCha8
// generator seeded by crypto/rand (see requestIDs): it reveals neither the
// request count nor the process, and cannot be guessed. A client's own
// X-Request-ID is kept only when the peer is a trusted proxy (which passes
// on the id it logged) and the id is 1 to 64 characters of A-Z a-z 0-9
// . _ : -; otherwise it is replaced, so no client can forge or inject
// log lines under another request's id.

// xRequestIDKey is fiber.HeaderXRequestID in fasthttp's canonical form.
var xRequestIDKey = []byte("X-Request-Id")

// maxRequestIDLen bounds a request id kept from a trusted proxy.
const maxRequestIDLen = 64

// AssignRequestIDs returns the middleware giving each request its id,
// keeping a client's own only from one of trusted. The id lives in the
// answer's X-Request-ID header only (RequestID reads it back): no string
// or Locals entry to allocate on every request.
func AssignRequestIDs(trusted Proxies) fiber.Handler {
	var ids requestIDs
	return func(c *fiber.Ctx) error {
		h := &c.Response().Header
		if v := c.Get(fiber.HeaderXRequestID); v != "" && validRequestID(v) && trusted.TrustsPeer(c) {
			h.Set(fiber.HeaderXRequestID, v) // copied into the response
		} else {
			var id [requestIDLen]byte
			ids.fill(&id)
			h.SetCanonical(xRequestIDKey, id[:]) // no copy and normalization of the name
		}
		return c.Next()
	}
}

// requestIDs makes request ids. crypto/rand costs a getrandom call per
// id, the largest cost of a status poll in the profiles; a pool of ChaCha8
// generators (math/rand/v2: cryptographically strong), each seeded with
// 32 bytes of crypto/rand, gives ids as unpredictable for a fraction of
// that. Safe for concurrent use; the zero value is ready.
type requestIDs struct{ pool sync.Pool }

// base32Alphabet is crypto/rand.Text's alphabet (RFC 4648 base32).
const base32Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// requestIDLen is the length of a fresh id: 26 base32 characters.
const requestIDLen = 26

// fill writes a fresh request id to id.
func (r *requestIDs) fill(id *[requestIDLen]byte) {
	g, _ := r.pool.Get().(*mrand.ChaCha8)
	if g == nil {
		var seed [32]byte
		rand.Read(seed[:]) // never fails (crypto/rand)
		g = mrand.NewChaCha8(seed)
	}
	_, _ = g.Read(id[:]) // never fails
	r.pool.Put(g)
	for i := range id {
		id[i] = base32Alphabet[id[i]%32]
	}
}

// RequestID returns the request's id, or "" before AssignRequestIDs ran.
func RequestID(c *fiber.Ctx) string {
	return string(c.Response().Header.Peek(fiber.HeaderXRequestID))
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

// TrustsPeer reports whether the request's peer (not X-Forwarded-For) is a
// trusted proxy.
func (p Proxies) TrustsPeer(c *fiber.Ctx) bool {
	if len(p) == 0 {
		return false
	}
	peer, ok := netip.AddrFromSlice(c.Context().RemoteIP())
	return ok && p.Trusts(peer)
}
