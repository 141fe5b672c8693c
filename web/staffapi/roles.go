package staffapi

import (
	"context"
	"errors"

	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Staff roles. Every admin route names the lowest role it needs, and one
// middleware (allow) enforces it; each role may do what the roles below
// it may:
//
//	viewer    GET /admin/events, GET /admin/events/{id}[/lifecycle|/page|/preview],
//	          GET /admin/audit[.csv], GET /admin/lists[/{name}[/entries]]
//	operator  PUT /admin/events/{id}[/page], POST /admin/events/{id}/page/publish
//	          (making and changing sales, as `anteroom apply` does with an
//	          operator's API key); POST /admin/events/{id}/pause|resume|close|
//	          reopen|rebuild; staff reads and releases of claims; GET
//	          /admin/events/{id}/sweep, POST /admin/events/{id}/cancellations;
//	          POST /admin/lists/{name}/entries (a bulk upload), PUT and DELETE
//	          /admin/lists/{name}/entries/{value}
//	admin     DELETE /admin/sessions, accounts and API keys
//	          (/admin/accounts…, /admin/keys/{prefix}), PUT and DELETE
//	          /admin/lists/{name}
//
// A caller that is signed in but below the role gets 403 forbidden, never
// 401. The admin token is the bootstrap: while no admin account exists it
// acts as an admin; once one does, it may only list, create and re-role
// accounts (recovery), and every other route answers it 403.

// apiKeyPrefix starts every staff API key.
const apiKeyPrefix = "ak_"

// Accounts keeps staff accounts; *staff.Accounts.
type Accounts interface {
	HasAdmin(ctx context.Context) (bool, error)
	Create(ctx context.Context, name string, role staff.Role, password staff.Password) error
	Get(ctx context.Context, name string) (staff.Account, error)
	List(ctx context.Context) ([]staff.Account, error)
	SignIn(ctx context.Context, name, password string) (staff.Account, error)
	SetRole(ctx context.Context, name string, role staff.Role) (staff.Role, error)
	Delete(ctx context.Context, name string) (staff.Account, error)
	NewKey(ctx context.Context, name string) (key, prefix string, err error)
	RevokeKey(ctx context.Context, prefix string) (string, error)
	CheckKey(ctx context.Context, key string) (staff.Account, error)
	ChangePassword(ctx context.Context, name string, password staff.Password, was string) (string, error)
	ResetPassword(ctx context.Context, name string, password staff.Password) error
}

// setStaff records the caller: the admin token (account "") or an account,
// whose role is read on every request so a change or removal holds at
// once on every node. It is the one place a console session of an
// account is checked against the account's incarnation gen: a session of
// a deleted account, or of one whose password or role changed since,
// ends here, even if the name was created again.
func (s *API) setStaff(c *fiber.Ctx, account, gen string) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	if account == "" {
		id := kit.Staff{Name: kit.TokenName, Role: staff.Admin, Token: true}
		if s.deps.Accounts != nil {
			has, err := s.deps.Accounts.HasAdmin(ctx)
			if err != nil {
				return s.staffDegraded(c, err)
			}
			if has {
				id.Role = ""
			}
		}
		kit.SetStaff(c, id)
		return nil
	}
	if s.deps.Accounts == nil {
		return kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "staff accounts are not kept on this node")
	}
	acc, err := s.deps.Accounts.Get(ctx, account)
	if errors.Is(err, staff.ErrNotFound) || err == nil && acc.Gen != gen {
		return errSessionEnded
	}
	if err != nil {
		return s.staffDegraded(c, err)
	}
	kit.SetStaff(c, kit.Staff{Name: acc.Name, Role: acc.Role})
	return nil
}

// errSessionEnded answers a session whose account was deleted, or whose
// password or role changed since it signed in.
var errSessionEnded = kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "the account was removed or changed since this session signed in; sign in again")

func (s *API) staffDegraded(c *fiber.Ctx, err error) error {
	s.cfg.Log.Warn("staff accounts", "request_id", kit.RequestID(c), "err", err)
	return errStaffUnavailable
}

// checkAPIKey authenticates a staff API key, throttled per address like
// the admin token.
func (s *API) checkAPIKey(c *fiber.Ctx, key string) error {
	addr := s.cfg.Proxies.ClientIP(c)
	ctx, cancel := s.ctx(c)
	defer cancel()
	wait, err := s.deps.StaffThrottle.Blocked(ctx, addr)
	if err != nil {
		return s.staffDegraded(c, err)
	}
	if wait > 0 {
		return kit.RateLimited("failed admin sign-ins from this address", wait)
	}
	acc, err := s.deps.Accounts.CheckKey(ctx, key)
	if errors.Is(err, staff.ErrBadLogin) {
		if _, err := s.deps.StaffThrottle.Failed(ctx, addr); err != nil {
			s.cfg.Log.Warn("staff throttle", "request_id", kit.RequestID(c), "err", err)
		}
		return kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "that is not a valid API key")
	}
	if err != nil {
		return s.staffDegraded(c, err)
	}
	kit.SetStaff(c, kit.Staff{Name: acc.Name, Role: acc.Role})
	return nil
}

// who authenticates the caller once per request and returns them.
func (s *API) who(c *fiber.Ctx) (kit.Staff, error) {
	if id, ok := kit.StaffOf(c); ok {
		return id, nil
	}
	if err := s.staffAuth(c); err != nil {
		return kit.Staff{}, err
	}
	id, _ := kit.StaffOf(c)
	return id, nil
}

// allow is the one place roles are enforced: the route needs at least
// role min; bootstrap routes also take the admin token.
func (s *API) allow(min staff.Role, bootstrap bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id, err := s.who(c)
		if err != nil {
			return err
		}
		if id.Role.Rank() < min.Rank() && !(bootstrap && id.Token) {
			if id.Token {
				return kit.NewProblem(fiber.StatusForbidden, "forbidden", "an admin account exists: the admin token may only manage accounts; sign in with an account")
			}
			return kit.NewProblem(fiber.StatusForbidden, "forbidden", "this needs the "+string(min)+" role; "+id.Name+" is "+string(id.Role))
		}
		return c.Next()
	}
}

// checkPassword signs an account in by name and password, throttled per
// address like the admin token; a failure is audited (checkFailed).
func (s *API) checkPassword(c *fiber.Ctx, name, password string) (staff.Account, error) {
	if err := s.accountsOrUnavailable(); err != nil {
		return staff.Account{}, err
	}
	return s.throttledSignIn(c, name, password, "session.sign_in_failed", "",
		kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "wrong name or password"))
}

// throttledSignIn checks name's password, throttled per address; a wrong
// one is counted against the address, audited as failAction (as name,
// with role; never what was tried) and answered refusal.
func (s *API) throttledSignIn(c *fiber.Ctx, name, password, failAction string, role staff.Role, refusal error) (staff.Account, error) {
	addr := s.cfg.Proxies.ClientIP(c)
	ctx, cancel := s.ctx(c)
	defer cancel()
	wait, err := s.deps.StaffThrottle.Blocked(ctx, addr)
	if err != nil {
		return staff.Account{}, s.staffDegraded(c, err)
	}
	if wait > 0 {
		return staff.Account{}, kit.RateLimited("failed admin sign-ins from this address", wait)
	}
	acc, err := s.deps.Accounts.SignIn(ctx, name, password)
	if errors.Is(err, staff.ErrBadLogin) {
		s.failed(c, addr, failAction, name, role)
		return staff.Account{}, refusal
	}
	if err != nil {
		return staff.Account{}, s.staffDegraded(c, err)
	}
	return acc, nil
}

// failed counts a failed authentication of addr against the throttle and
// records it in the audit (without what was tried): as who, a valid
// account name, with role.
func (s *API) failed(c *fiber.Ctx, addr, action, who string, role staff.Role) {
	ctx, cancel := s.ctx(c)
	defer cancel()
	if _, err := s.deps.StaffThrottle.Failed(ctx, addr); err != nil {
		s.cfg.Log.Warn("staff throttle", "request_id", kit.RequestID(c), "err", err)
	}
	s.cfg.Log.Info("failed staff authentication", "request_id", kit.RequestID(c), "action", action, "addr", addr)
	if !staff.ValidName(who) && who != kit.TokenName {
		who = ""
	}
	s.recordFailure(c, staff.Entry{Who: who, Role: string(role), Action: action}, addr)
}
