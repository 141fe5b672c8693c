package web

import (
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

// HeaderIdentity trusts a user id set by a gateway in front of anteroom.
// Use it only where clients cannot reach anteroom without that gateway.
type HeaderIdentity struct {
	// Header carries the user id.
	//
	// Default: X-User-ID
	Header string
}

// User returns the header's user id.
func (h HeaderIdentity) User(c *fiber.Ctx, _ bool) (string, error) {
	name := h.Header
	if name == "" {
		name = "X-User-ID"
	}
	u := c.Get(name)
	if u == "" {
		return "", problem(fiber.StatusUnauthorized, "unauthenticated", "missing "+name+" header")
	}
	if !validUser(u) {
		return "", badRequest("%s must be 1 to 128 printable characters without spaces", name)
	}
	return string([]byte(u)), nil // copy: the header buffer is reused
}
