package web

import "github.com/anteroom/anteroom/web/protect"

// The edge protection's names as the node's wiring, its settings and its
// tests use them; package protect owns them (see its package comment).
// Kept here so that internal/node and cmd/anteroom configure the edge
// through web alone.
type (
	// Identity names the caller (protect.Identity).
	Identity = protect.Identity
	// IdentityMode is a way of naming callers (protect.IdentityMode).
	IdentityMode = protect.IdentityMode
	// HeaderIdentity is the header mode (protect.HeaderIdentity).
	HeaderIdentity = protect.HeaderIdentity
	// VisitorIdentity is the anonymous mode (protect.VisitorIdentity).
	VisitorIdentity = protect.VisitorIdentity
	// UserTokenIdentity is the jwt mode (protect.UserTokenIdentity).
	UserTokenIdentity = protect.UserTokenIdentity
	// TicketCache caches verified queue tickets (protect.TicketCache).
	TicketCache = protect.TicketCache
)

// Identity modes, headers and defaults (see package protect).
const (
	IdentityAnonymous  = protect.IdentityAnonymous
	IdentityJWT        = protect.IdentityJWT
	IdentityHeader     = protect.IdentityHeader
	UserIDHeader       = protect.UserIDHeader
	UserTokenHeader    = protect.UserTokenHeader
	VisitorCookie      = protect.VisitorCookie
	CaptchaHeader      = protect.CaptchaHeader
	PoWHeader          = protect.PoWHeader
	DeviceHeader       = protect.DeviceHeader
	PaymentHeader      = protect.PaymentHeader
	DefaultMaxInFlight = protect.DefaultMaxInFlight
)

// ParseIdentityMode reads an identity mode: anonymous, jwt or header.
func ParseIdentityMode(s string) (IdentityMode, error) { return protect.ParseIdentityMode(s) }

// NewHeaderIdentity returns the header mode (protect.NewHeaderIdentity).
func NewHeaderIdentity(header string, trusted []string) (HeaderIdentity, error) {
	return protect.NewHeaderIdentity(header, trusted)
}

// NewTicketCache wraps next with a cache of about size verified tickets
// (protect.NewTicketCache).
func NewTicketCache(next tickets, size int) *TicketCache { return protect.NewTicketCache(next, size) }

// SolvePoW solves a proof-of-work challenge as the page does
// (protect.SolvePoW); for tests and clients written in Go.
func SolvePoW(challenge string, nbits int) string { return protect.SolvePoW(challenge, nbits) }
