package staffapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// consoleSessionJSON answers sign-in and GET /admin/session: the console keeps the
// CSRF token in memory and sends it back on every change.
type consoleSessionJSON struct {
	CSRFToken string    `json:"csrf_token"`
	ExpiresAt time.Time `json:"expires_at"`
	// Account is who is signed in (admin-token for the bootstrap token)
	// and Role their role now: empty for the token once an admin account
	// exists (it may then only manage accounts).
	Account string `json:"account"`
	Role    string `json:"role"`
}

// signInJSON is the body of POST /admin/session: an account's name and
// password, or the admin token.
type signInJSON struct {
	Token    string `json:"token"`
	Name     string `json:"name"`
	Password string `json:"password"`
}

// signIn exchanges the admin token, or an account's name and password, for
// a console session cookie.
func (s *API) signIn(c *fiber.Ctx) error {
	if s.cfg.AdminToken == "" {
		return errAdminDisabled
	}
	if !strings.HasPrefix(c.Get(fiber.HeaderContentType), fiber.MIMEApplicationJSON) {
		return kit.BadRequest("sign in with a JSON body {\"name\": ..., \"password\": ...} or {\"token\": ...}")
	}
	var in signInJSON
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return kit.BadRequest("malformed sign-in JSON: %s", kit.JSONProblem(err))
	}
	var acc staff.Account
	if in.Name != "" || in.Token == "" {
		a, err := s.checkPassword(c, in.Name, in.Password)
		if err != nil {
			return err
		}
		acc = a
	} else if err := s.checkAdminToken(c, in.Token, true); err != nil {
		return err
	}
	now := s.now()
	sess, err := newConsoleSession(now, consoleTTL)
	if err != nil {
		return err
	}
	sess.account, sess.gen = acc.Name, acc.Gen
	if err := s.setStaff(c, sess.account, sess.gen); err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.deps.StaffSessions.Start(ctx, sess.nonce, sess.expires, now); err != nil {
		s.cfg.Log.Warn("staff sessions", "request_id", kit.RequestID(c), "err", err)
		return errStaffUnavailable
	}
	s.record(c, "session.sign_in", "", nil, fiber.Map{"addr": s.cfg.Proxies.ClientIP(c)})
	key := consoleKey(s.cfg.AdminToken)
	c.Cookie(s.consoleCookie(c, sess.encode(key), sess.expires))
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(s.consoleSessionView(c, sess, key))
}

// sessionInfo returns the CSRF token of a valid console session, so a reloaded
// console can carry on.
func (s *API) sessionInfo(c *fiber.Ctx) error {
	if s.cfg.AdminToken == "" {
		return errAdminDisabled
	}
	key := consoleKey(s.cfg.AdminToken)
	sess, ok, err := s.liveConsoleSession(c, key, c.Cookies(ConsoleCookie))
	if err != nil {
		return err
	}
	if !ok {
		return kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "not signed in")
	}
	if err := s.setStaff(c, sess.account, sess.gen); err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(s.consoleSessionView(c, sess, key))
}

func (s *API) consoleSessionView(c *fiber.Ctx, sess consoleSession, key []byte) consoleSessionJSON {
	id, _ := kit.StaffOf(c)
	return consoleSessionJSON{CSRFToken: sess.csrf(key), ExpiresAt: sess.expires.UTC(), Account: id.Name, Role: string(id.Role)}
}

// signOut ends the session on every node (the shared session set) and
// clears the cookie. With a live session it needs the CSRF token like any
// other change; a stale or signed-out cookie is simply cleared.
func (s *API) signOut(c *fiber.Ctx) error {
	if s.cfg.AdminToken != "" {
		if raw := c.Cookies(ConsoleCookie); raw != "" {
			sess, ok, err := s.liveConsoleSession(c, consoleKey(s.cfg.AdminToken), raw)
			if err != nil {
				return err
			}
			if ok {
				if err := s.staffAuth(c); err != nil {
					return err
				}
				ctx, cancel := s.ctx(c)
				defer cancel()
				if err := s.deps.StaffSessions.End(ctx, sess.nonce); err != nil {
					s.cfg.Log.Warn("staff sessions", "request_id", kit.RequestID(c), "err", err)
					return errStaffUnavailable
				}
				s.record(c, "session.sign_out", "", nil, nil)
			}
		}
	}
	c.Cookie(s.consoleCookie(c, "", time.Unix(0, 0)))
	return c.SendStatus(fiber.StatusNoContent)
}

func (s *API) consoleCookie(c *fiber.Ctx, value string, expires time.Time) *fiber.Cookie {
	maxAge := int(time.Until(expires) / time.Second)
	if value == "" {
		maxAge = 0 // the past Expires deletes it
	}
	return &fiber.Cookie{
		Name: ConsoleCookie, Value: value, Path: consolePath, Expires: expires, MaxAge: maxAge,
		HTTPOnly: true, SameSite: fiber.CookieSameSiteStrictMode, Secure: c.Protocol() == "https",
	}
}

// eventSummaryJSON is one row of the staff event list. It never carries the
// seed.
type eventSummaryJSON struct {
	ID             string      `json:"id"`
	Name           string      `json:"name"`
	State          event.Phase `json:"state"`
	Mode           event.Mode  `json:"mode"`
	Paused         bool        `json:"paused"`
	Closed         bool        `json:"closed"` // by staff (event.Closure)
	HealthHeld     bool        `json:"health_held"`
	SoldOut        bool        `json:"sold_out"`
	Supply         int64       `json:"supply"`
	Remaining      int64       `json:"remaining"`
	Joined         int64       `json:"joined"`
	Admitted       int64       `json:"admitted"`
	StartsAt       time.Time   `json:"starts_at"`
	WindowClosesAt time.Time   `json:"window_closes_at"`
	Version        int64       `json:"version"`
}

// listEvents lists every sale in the node's view, newest start first.
func (s *API) listEvents(c *fiber.Ctx) error {
	now := s.now()
	all := s.deps.Sales.All()
	out := make([]eventSummaryJSON, 0, len(all))
	for _, sale := range all {
		cfg := &sale.Config
		out = append(out, eventSummaryJSON{
			ID: cfg.ID, Name: cfg.Name, State: cfg.PhaseAt(now, sale.SoldOut), Mode: cfg.Mode,
			Paused: cfg.Paused, Closed: cfg.IsClosed(), HealthHeld: sale.HealthHeld, SoldOut: sale.SoldOut, Supply: cfg.OnSale(), Remaining: sale.Remaining,
			Joined: sale.Joined, Admitted: min(int64(sale.Frontier), sale.Joined),
			StartsAt: cfg.StartsAt, WindowClosesAt: cfg.WindowEnd(), Version: cfg.Version,
		})
	}
	slices.SortFunc(out, func(a, b eventSummaryJSON) int {
		return cmp.Or(b.StartsAt.Compare(a.StartsAt), strings.Compare(a.ID, b.ID))
	})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"events": out})
}
