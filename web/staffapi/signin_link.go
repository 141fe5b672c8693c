package staffapi

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// One-time sign-in links: the demo's way into the console (`anteroom demo
// -keep` prints one). GET /admin/session/link?token=T[&event=ID] spends
// the link and, for a request from this machine, starts a console session
// of the account it names as a password sign-in does (cookie, session
// set, audit "session.sign_in" via "link"), then sends the browser to the
// console on that sale (303 /admin/?event=ID). The route exists only on a
// node given Deps.SignInLinks, which only the demo command does: no node
// setting turns it on.
//
// Refused, with nothing created (no session, no cookie, the link not
// spent unless it was presented from loopback):
//   - 403 forbidden: a request not from loopback (loopbackOnly);
//   - 400 bad_request: an event that cannot name a sale, a HEAD, or a
//     browser's prefetch or prerender (Sec-Purpose, Purpose: prefetch);
//   - 401 unauthenticated: a link used before, expired or unknown
//     (staff.ErrLinkSpent), or whose account has changed since it was
//     made (its password or role: errSessionEnded).

// SignInLinks spends one-time console sign-in links; *staff.SignInLinks.
type SignInLinks interface {
	Redeem(ctx context.Context, token string, now time.Time) (staff.Account, error)
}

// SignInLinkPath is the route of one-time sign-in links.
const SignInLinkPath = "/admin/session/link"

// errLinkNotLoopback refuses a sign-in link presented from anywhere but
// this machine.
var errLinkNotLoopback = kit.NewProblem(fiber.StatusForbidden, "forbidden",
	"a sign-in link works only in a browser on the machine that runs the node (loopback), never through a proxy")

// forwardingHeaders are the headers a proxy adds when it forwards a
// request; a browser opening a link on this machine sends none.
var forwardingHeaders = [...]string{fiber.HeaderXForwardedFor, "Forwarded", "X-Real-Ip", fiber.HeaderXForwardedHost, fiber.HeaderXForwardedProto, "Via"}

// loopbackOnly reports whether request c comes from this machine: its
// peer (the TCP connection, which a client cannot choose) is a loopback
// address, so is the client address the node believes (a trusted proxy's
// X-Forwarded-For: a proxy on loopback forwarding a remote visitor), and
// it carries no forwarding header at all (a proxy on loopback that is not
// trusted, forwarding a remote visitor). A forged X-Forwarded-For makes
// nothing loopback: from a remote peer it fails the first test, from
// loopback the last.
func loopbackOnly(c *fiber.Ctx, proxies kit.Proxies) bool {
	peer, ok := netip.AddrFromSlice(c.Context().RemoteIP())
	if !ok || !peer.Unmap().IsLoopback() || !proxies.ClientAddr(c).IsLoopback() {
		return false
	}
	for _, h := range forwardingHeaders {
		if len(c.Request().Header.Peek(h)) > 0 {
			return false
		}
	}
	return true
}

// isPrefetch reports whether c is a browser's speculative load (a
// prefetch or prerender of a link or a typed address), not a visit.
func isPrefetch(c *fiber.Ctx) bool {
	return c.Get("Sec-Purpose") != "" || strings.Contains(strings.ToLower(c.Get("Purpose")), "prefetch")
}

// signInByLink answers GET /admin/session/link (see above).
func (s *API) signInByLink(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	if s.cfg.AdminToken == "" {
		return errAdminDisabled
	}
	if !loopbackOnly(c, s.cfg.Proxies) {
		return errLinkNotLoopback
	}
	if c.Method() != fiber.MethodGet || isPrefetch(c) {
		// A HEAD (curl -I) or a browser's speculative load must not
		// spend the link before the person opens it.
		return kit.BadRequest("open the sign-in link in a browser; this request (a HEAD or a prefetch) spends nothing")
	}
	ev := c.Query("event")
	if ev != "" && !event.ValidID(ev) {
		return kit.BadRequest("event %q cannot name a sale", ev)
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	now := s.now()
	acc, err := s.deps.SignInLinks.Redeem(ctx, c.Query("token"), now)
	if errors.Is(err, staff.ErrLinkSpent) {
		return err
	}
	if err != nil {
		return s.staffDegraded(c, err)
	}
	if err := s.setStaff(c, acc.Name, acc.Gen); err != nil {
		return err
	}
	sess, err := newConsoleSession(now, consoleTTL)
	if err != nil {
		return err
	}
	sess.account, sess.gen = acc.Name, acc.Gen
	if err := s.deps.StaffSessions.Start(ctx, sess.nonce, sess.expires, now); err != nil {
		return s.staffDegraded(c, err)
	}
	s.record(c, "session.sign_in", "", nil, fiber.Map{"addr": s.cfg.Proxies.ClientIP(c), "via": "link"})
	c.Cookie(s.consoleCookie(c, sess.encode(consoleKey(s.cfg.AdminToken)), sess.expires))
	to := consolePath + "/"
	if ev != "" {
		to += "?event=" + url.QueryEscape(ev)
	}
	return c.Redirect(to, fiber.StatusSeeOther)
}
