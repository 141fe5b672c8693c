// Package protect is the edge protection in front of the public API: the
// node's in-flight cap, early birds (nothing for a sale before its
// pre-queue opens), the node-local status limits, and on join invites,
// proofs of work, the distributed rate limits and captchas, on claim the
// distributed rate limits and the device and payment reservations. It
// also names the caller (Identity: the header, jwt and anonymous modes)
// and caches verified queue tickets with their poll budgets
// (TicketCache).
//
// It owns the cheapest "no": each defence runs before anything dearer
// (node-local before Redis, Redis before a captcha provider), and refuses
// with a problem that says when to retry. Who may claim past it is package
// turnstile's and claim.lua's (see turnstile's package comment).
package protect

import (
	"log/slog"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Consumer-side interfaces of the handlers here.
type (
	// Identity names the caller; see HeaderIdentity, VisitorIdentity and
	// UserTokenIdentity.
	Identity interface {
		// User returns the caller's user id, or a *kit.Problem. mint is true
		// on join, where an anonymous visitor may be given an id.
		User(c *fiber.Ctx, mint bool) (string, error)
	}
	// tickets signs and verifies queue tickets (*tokens.Tickets, or a
	// TicketCache over them).
	tickets interface {
		Sign(t tokens.Ticket) (string, error)
		Verify(raw, event string) (tokens.Ticket, error)
	}
	// sales reads the node's view of a sale (*sale.Snapshots).
	sales interface {
		Get(id string) (*admission.Sale, bool)
	}
)

// Deps are the services the defences use.
//
// Required: Identity, Tickets and Sales. Optional: Limiter (nil turns the
// distributed limits off; node-local limits still apply) and Reservations
// (nil answers the joins that spend a busy network's challenge 503
// degraded).
type Deps struct {
	Identity     Identity
	Tickets      tickets
	Sales        sales
	Limiter      Limiter
	Reservations Reserver
}

// Config tunes the edge (see web.Config, whose fields these are).
type Config struct {
	// Secret keys proof-of-work challenges, invites and bypass passes;
	// the same on every node.
	//
	// Default: a random secret of this process
	Secret []byte
	// MaxInFlight caps the requests in progress on this node.
	//
	// Default: DefaultMaxInFlight
	MaxInFlight int
	// TrustedProxies are addresses or CIDR ranges of proxies whose
	// X-Forwarded-For names the client.
	TrustedProxies []string
	// GlobalJoin and GlobalClaim are the deployment's total budgets of
	// joins and claims per second.
	//
	// Default: unlimited
	GlobalJoin, GlobalClaim limit.Limit
	// CaptchaSiteverifyURL replaces the providers' siteverify endpoints
	// (tests only); CaptchaTimeout bounds one call.
	//
	// Default: the providers' endpoints; 3s
	CaptchaSiteverifyURL string
	CaptchaTimeout       time.Duration
	// Timeout bounds every Redis call a defence makes.
	//
	// Default: 3s
	Timeout time.Duration
	// Log receives failures of backing services.
	//
	// Default: slog.Default()
	Log *slog.Logger
	// Clock is the node's clock.
	//
	// Default: time.Now
	Clock kit.Clock
}
