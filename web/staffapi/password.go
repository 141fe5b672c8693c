package staffapi

import (
	"errors"
	"strings"

	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Passwords. A password change, like a role change or a delete, gives the
// account a new incarnation (staff.Account.Gen): every session and API
// key made for the old one ends. One's own change moves the session that
// made it to the new incarnation; an admin's reset ends them all.

// passwordChangeJSON is the body of POST /admin/session/password.
type passwordChangeJSON struct {
	OldPassword string `json:"old_password"`
	NewPassword string `json:"new_password"`
}

// passwordResetJSON is the body of PUT /admin/accounts/{name}/password.
type passwordResetJSON struct {
	Password string `json:"password"`
}

// validPassword answers a new password of the wrong length 400.
func validPassword(p string) error {
	if len(p) < staff.MinPassword || len(p) > 256 {
		return kit.BadRequest("password must have 12 to 256 characters")
	}
	return nil
}

// changePassword answers POST /admin/session/password {"old_password",
// "new_password"} from a console session of an account: with the right
// old password it sets the new one, ends the account's other sessions and
// its API keys, and keeps this session signed in (a new cookie, the same
// CSRF token). A wrong old password is 403 and counts against the
// address like a failed sign-in.
func (s *API) changePassword(c *fiber.Ctx) error {
	if err := s.accountsOrUnavailable(); err != nil {
		return err
	}
	id, _ := kit.StaffOf(c)
	key := consoleKey(s.cfg.AdminToken)
	sess, ok := parseConsoleSession(key, c.Cookies(ConsoleCookie), s.now())
	if id.Token || kit.Bearer(c) != "" || !ok || sess.account != id.Name {
		return kit.NewProblem(fiber.StatusForbidden, "forbidden", "a password is changed from a console session of its account; the admin token and API keys have none")
	}
	var in passwordChangeJSON
	if err := kit.DecodeStrict(c, "password change", &in); err != nil {
		return err
	}
	if in.OldPassword == "" {
		return kit.BadRequest("old_password is required")
	}
	if err := validPassword(in.NewPassword); err != nil {
		return err
	}
	acc, err := s.checkOldPassword(c, id, in.OldPassword)
	if err != nil {
		return err
	}
	if acc.Gen != sess.gen {
		return errSessionEnded
	}
	// The hash is CPU work: done before the deadline for Redis starts.
	pw, err := staff.HashPassword(in.NewPassword)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	gen, err := s.deps.Accounts.ChangePassword(ctx, acc.Name, pw, acc.Gen)
	if errors.Is(err, staff.ErrStale) || errors.Is(err, staff.ErrNotFound) {
		return errSessionEnded
	}
	if err != nil {
		return err
	}
	s.record(c, "account.password", "", nil, fiber.Map{"name": acc.Name, "api_keys_ended": acc.Keys})
	sess.gen = gen
	c.Cookie(s.consoleCookie(c, sess.encode(key), sess.expires))
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(s.consoleSessionView(c, sess, key))
}

// checkOldPassword checks the caller's old password, throttled and, when
// wrong, audited like a failed sign-in (403: the session stays).
func (s *API) checkOldPassword(c *fiber.Ctx, id kit.Staff, old string) (staff.Account, error) {
	return s.throttledSignIn(c, id.Name, old, "account.password_failed", id.Role,
		kit.NewProblem(fiber.StatusForbidden, "forbidden", "the old password is wrong"))
}

// resetPassword answers PUT /admin/accounts/{name}/password {"password"}
// (an admin, or the admin token for recovery): it sets the account's
// password and ends all its sessions and API keys.
func (s *API) resetPassword(c *fiber.Ctx) error {
	if err := s.accountsOrUnavailable(); err != nil {
		return err
	}
	var in passwordResetJSON
	if err := kit.DecodeStrict(c, "password reset", &in); err != nil {
		return err
	}
	if err := validPassword(in.Password); err != nil {
		return err
	}
	name := strings.Clone(c.Params("name"))
	pw, err := staff.HashPassword(in.Password)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.deps.Accounts.ResetPassword(ctx, name, pw); err != nil {
		return err
	}
	s.record(c, "account.password_reset", "", nil, fiber.Map{"name": name})
	return c.SendStatus(fiber.StatusNoContent)
}
