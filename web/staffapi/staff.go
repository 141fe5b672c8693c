package staffapi

import (
	"crypto/subtle"
	"time"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Staff authentication is throttled per client address (clientIP: the
// peer, or the first untrusted X-Forwarded-For hop behind trusted
// proxies; IPv6 per /64): after a handful of wrong admin tokens, bearer or
// sign-in, within a window, every attempt from that address is answered
// 429 rate_limited with Retry-After until the window ends — without
// comparing the token, so a blocked guesser learns nothing, and the
// answers never say anything about the token beyond "wrong". With the
// Redis-backed staff state (package staff) the count is shared by every
// node.

// Staff problems answered from several places.
var (
	errStaffUnavailable = kit.RetryLater("degraded", "staff sign-in is unavailable for a moment", 1)
	errAdminDisabled    = kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "the admin API is disabled on this node")
)

// checkAdminToken compares tok with the admin token unless the caller's
// address is blocked; a wrong token counts against the address, and on a
// console sign-in (signIn) is audited.
func (s *API) checkAdminToken(c *fiber.Ctx, tok string, signIn bool) error {
	addr := s.cfg.Proxies.ClientIP(c)
	ctx, cancel := s.ctx(c)
	defer cancel()
	wait, err := s.deps.StaffThrottle.Blocked(ctx, addr)
	if err != nil {
		s.cfg.Log.Warn("staff throttle", "request_id", kit.RequestID(c), "err", err)
		return errStaffUnavailable
	}
	if wait > 0 {
		return kit.RateLimited("failed admin sign-ins from this address", wait)
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.AdminToken)) == 1 {
		return nil
	}
	if signIn {
		s.failed(c, addr, "session.sign_in_failed", kit.TokenName, "")
	} else {
		if _, err := s.deps.StaffThrottle.Failed(ctx, addr); err != nil {
			s.cfg.Log.Warn("staff throttle", "request_id", kit.RequestID(c), "err", err)
		}
		s.cfg.Log.Info("failed admin authentication", "request_id", kit.RequestID(c), "addr", addr)
	}
	return kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "that is not the admin token")
}

// endAllSessions signs every console session out on every node (DELETE
// /admin/sessions). The admin bearer token keeps working; rotating it is
// how to lock out whoever holds it.
func (s *API) endAllSessions(c *fiber.Ctx) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.deps.StaffSessions.EndAll(ctx); err != nil {
		s.cfg.Log.Warn("staff sessions", "request_id", kit.RequestID(c), "err", err)
		return errStaffUnavailable
	}
	s.record(c, "sessions.end_all", "", nil, nil)
	c.Cookie(s.consoleCookie(c, "", time.Unix(0, 0)))
	return c.SendStatus(fiber.StatusNoContent)
}
