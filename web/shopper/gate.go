package shopper

import (
	"net/url"
	"strings"
	"time"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// GateFailOpenHeader is on every gate answer given while staff have the
// gate failing open (event.Config.FailOpenUntil): the deadline, RFC 3339
// in UTC. Such an answer lets a visitor through without an admission.
const GateFailOpenHeader = "X-Anteroom-Fail-Open"

// GateUserHeader is the header of a gate answer that names the admitted
// user (the admission token's sub), for a proxy to forward to the shop.
const GateUserHeader = "X-Anteroom-User"

// GateReturnHeader is the request header in which a proxy passes the gate
// the URI it protects ($request_uri); GateRedirectHeader, on a refusal,
// answers the waiting page's address with that URI as its return
// parameter, for the proxy's redirect.
const (
	GateReturnHeader   = "X-Original-URI"
	GateRedirectHeader = "X-Anteroom-Redirect"
)

// GateMethodHeader is the request header in which a proxy passes the gate
// the method of the request it protects ($request_method). With
// GateReturnHeader it is the request the door's rules see at the gate
// (gateLine), not the gate call's own GET /events/{id}/gate.
const GateMethodHeader = "X-Original-Method"

// maxReturnLen bounds a return path.
const maxReturnLen = 2048

// SafeReturn reports whether p may be a waiting page's return address: a
// path on this site ("/..."), never another site ("//host", "/\host",
// "https://..."), without control characters. The page applies the same
// rule before it navigates.
func SafeReturn(p string) bool {
	if len(p) == 0 || len(p) > maxReturnLen || p[0] != '/' || strings.HasPrefix(p, "//") || strings.ContainsRune(p, '\\') {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return false
		}
	}
	return true
}

// waitingPage returns the waiting page of event ev, returning to ret once
// admitted when ret is a SafeReturn path.
func waitingPage(ev, ret string) string {
	page := "/e/" + ev
	if SafeReturn(ret) {
		page += "?return=" + url.QueryEscape(ret)
	}
	return page
}

// AdmissionCookie names the cookie that holds the admission token of event
// ev, set by the status answer that admits a browser. A proxy in front of
// the shop (nginx auth_request) passes it to the gate.
func AdmissionCookie(ev string) string { return "anteroom_a_" + ev }

// errNotAdmitted is the gate's one refusal: a proxy turns any 401 into a
// redirect to the waiting page, so the reason stays out of the answer.
var errNotAdmitted = kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "no valid admission token for this event")

// setAdmissionCookie hands a browser its admission token as an HttpOnly
// cookie on the whole site, expiring with the token: the shop's pages,
// behind a proxy that asks the gate, then let the visitor in.
func setAdmissionCookie(c *fiber.Ctx, ev, token string, exp time.Time) {
	kit.SetCookie(c, &fiber.Cookie{ // Lax, or None when the room is embedded by another site
		Name: AdmissionCookie(ev), Value: token, Path: "/", Expires: exp, HTTPOnly: true,
	})
}

// gate answers a proxy's per-request check (GET /events/{id}/gate, nginx
// auth_request): 204 with GateUserHeader when the request carries an
// admission token of this event that verifies now — the admission cookie
// first, then an Authorization bearer — and 401 otherwise, with
// GateRedirectHeader naming the waiting page. Verification is
// offline, with the JWKS's keys: no Redis or NATS call.
//
// In a safety-net room (event.SafetyNet) the gate also renews an admission
// past half its life (gateRenew) and, for a visitor without one, admits
// at once while the room is under its thresholds (gateEnter: one Redis
// step; the 204 then sets the admission cookie, which the proxy passes
// on). Only a visitor it cannot admit is sent to the waiting page. While
// staff have closed the room, every visitor is.
//
// While staff have it failing open (event.Config.FailsOpen, and the room
// not closed), it answers 204 to everyone the door lets on, with
// GateFailOpenHeader, naming the user of an admission that verifies, and
// calls no Redis (no renewal, no entrance): see gateFailOpen. The door
// still refuses whom it blocks: a fail-open opens the queue, not the door.
func (s *API) gate(c *fiber.Ctx) error {
	sale := kit.SaleOf(c)
	ev := sale.Config.ID
	c.Set(fiber.HeaderCacheControl, "no-store")
	now := s.now()
	if sale.Config.CheckOpen(now) != nil {
		// Closed by staff: everyone, admitted or not, to the waiting
		// page, which says so (event.Closure).
		c.Set(GateRedirectHeader, waitingPage(ev, c.Get(GateReturnHeader)))
		return errNotAdmitted
	}
	var adm *tokens.Admission
	for _, raw := range [...]string{c.Cookies(AdmissionCookie(ev)), kit.Bearer(c)} {
		if raw == "" {
			continue
		}
		if a, err := s.deps.Turnstile.Verify(raw, ev, now); err == nil {
			adm = &a
			break
		}
	}
	var v door.Verdict
	if s.deps.Door.Applies(&sale.Config) {
		// The door (doorstep.go): the admitted user, else the visitor the
		// identity names without minting. In a room, a visitor without an
		// admission may be admitted at once (gateEnter): a room's join,
		// whose entrance decides a filter's "maybe" exactly (door.Room).
		user, step := "", door.Gate
		if adm != nil {
			user = adm.User
		} else if u, err := s.deps.Identity.User(c, false); err == nil {
			user = u
		}
		if adm == nil && sale.Config.IsSafetyNet() {
			step = door.Room
		}
		var err error
		v, err = s.ask(c, &sale.Config, user, nil, now, step)
		switch {
		case err != nil:
			return err // 403 blocked, not_eligible
		case v.Action == door.Bypass:
			return c.SendStatus(fiber.StatusNoContent)
		case v.Action == door.Sink:
			c.Set(GateRedirectHeader, waitingPage(ev, c.Get(GateReturnHeader)))
			return errNotAdmitted
		}
	}
	if sale.Config.FailsOpen(now) {
		return s.gateFailOpen(c, &sale.Config, now)
	}
	if adm != nil {
		s.gateRenew(c, &sale.Config, *adm, now)
		c.Set(GateUserHeader, adm.User)
		return c.SendStatus(fiber.StatusNoContent)
	}
	if ok, err := s.gateEnter(c, sale, v, now); err != nil || ok {
		if err != nil {
			return err // the room cannot answer: 503, for the gateway to see; the lists: 403
		}
		return c.SendStatus(fiber.StatusNoContent)
	}
	c.Set(GateRedirectHeader, waitingPage(ev, c.Get(GateReturnHeader)))
	return errNotAdmitted
}

// maxMethodLen bounds a method named in GateMethodHeader.
const maxMethodLen = 16

// gateLine makes r, the door's view of a gate call, the request the proxy
// protects: its method from GateMethodHeader (a token of at most
// maxMethodLen upper-case letters, else the call's own) and its path and
// query from GateReturnHeader (a path, else the call's own). The proxy
// sets both itself (deploy/gateway/nginx.conf, the Cloudflare Worker), so
// a client cannot choose them; a caller of the gate who names another
// request changes only the gate's answer to itself, which lets nobody in.
func gateLine(c *fiber.Ctx, r *door.Request) {
	if m := c.Get(GateMethodHeader); m != "" && len(m) <= maxMethodLen && strings.Trim(m, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
		r.Method = m
	}
	if uri := c.Get(GateReturnHeader); uri != "" && uri[0] == '/' {
		r.Path, r.Query, _ = strings.Cut(uri, "?")
	}
}

// gateFailOpen is the gate while cfg fails open at now: 204 for everyone,
// GateFailOpenHeader naming the deadline, and GateUserHeader when an
// admission verifies (offline), so the shop still knows who an admitted
// visitor is. Nothing here calls Redis: a fail-open is for when it may be
// failing. It lets through to the gated pages only; a claim still needs
// an admission (turnstile.Authorize knows nothing of it).
func (s *API) gateFailOpen(c *fiber.Ctx, cfg *event.Config, now time.Time) error {
	c.Set(GateFailOpenHeader, cfg.FailOpenUntil.UTC().Format(time.RFC3339))
	for _, raw := range [...]string{c.Cookies(AdmissionCookie(cfg.ID)), kit.Bearer(c)} {
		if raw == "" {
			continue
		}
		if a, err := s.deps.Turnstile.Verify(raw, cfg.ID, now); err == nil {
			c.Set(GateUserHeader, a.User)
			break
		}
	}
	return c.SendStatus(fiber.StatusNoContent)
}
