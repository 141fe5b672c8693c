package staffapi

import (
	"strings"

	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Staff accounts and their API keys (admin role, or the admin token for
// listing, creating and re-roling accounts: see roles.go). Every change is
// recorded in the audit trail; passwords and keys never are.

func (s *API) accountsOrUnavailable() error {
	if s.deps.Accounts == nil {
		return kit.RetryLater("degraded", "staff accounts are not kept on this node", 5)
	}
	return nil
}

func (s *API) listAccounts(c *fiber.Ctx) error {
	if err := s.accountsOrUnavailable(); err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	out, err := s.deps.Accounts.List(ctx)
	if err != nil {
		return s.staffDegraded(c, err)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(fiber.Map{"accounts": out})
}

// newAccountJSON is the body of POST /admin/accounts.
type newAccountJSON struct {
	Name     string     `json:"name"`
	Role     staff.Role `json:"role"`
	Password string     `json:"password"`
}

// roleJSON is the body of PUT /admin/accounts/{name}.
type roleJSON struct {
	Role staff.Role `json:"role"`
}

// createAccount answers POST /admin/accounts {"name", "role", "password"}.
func (s *API) createAccount(c *fiber.Ctx) error {
	if err := s.accountsOrUnavailable(); err != nil {
		return err
	}
	var in newAccountJSON
	if err := kit.DecodeStrict(c, "account", &in); err != nil {
		return err
	}
	switch {
	case !staff.ValidName(in.Name):
		return kit.BadRequest("name must be 1 to 32 characters of a-z 0-9 _ . - and start with a letter or digit")
	case in.Role.Rank() == 0:
		return kit.BadRequest("role must be viewer, operator or admin")
	case len(in.Password) < staff.MinPassword || len(in.Password) > 256:
		return kit.BadRequest("password must have 12 to 256 characters")
	}
	// The hash is CPU work: done before the deadline for Redis starts.
	pw, err := staff.HashPassword(in.Password)
	if err != nil {
		return err
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	if err := s.deps.Accounts.Create(ctx, in.Name, in.Role, pw); err != nil {
		return err
	}
	s.record(c, "account.create", "", nil, fiber.Map{"name": in.Name, "role": in.Role})
	return c.Status(fiber.StatusCreated).JSON(staff.Account{Name: in.Name, Role: in.Role, Keys: []string{}})
}

// setAccountRole answers PUT /admin/accounts/{name} {"role"}.
func (s *API) setAccountRole(c *fiber.Ctx) error {
	if err := s.accountsOrUnavailable(); err != nil {
		return err
	}
	var in roleJSON
	if err := kit.DecodeStrict(c, "account", &in); err != nil {
		return err
	}
	if in.Role.Rank() == 0 {
		return kit.BadRequest("role must be viewer, operator or admin")
	}
	name := strings.Clone(c.Params("name"))
	ctx, cancel := s.ctx(c)
	defer cancel()
	old, err := s.deps.Accounts.SetRole(ctx, name, in.Role)
	if err != nil {
		return err
	}
	s.record(c, "account.role", "", fiber.Map{"name": name, "role": old}, fiber.Map{"name": name, "role": in.Role})
	acc, err := s.deps.Accounts.Get(ctx, name)
	if err != nil {
		return err
	}
	return c.JSON(acc)
}

// deleteAccount answers DELETE /admin/accounts/{name}: its keys go with
// it, and its sessions end at once.
func (s *API) deleteAccount(c *fiber.Ctx) error {
	if err := s.accountsOrUnavailable(); err != nil {
		return err
	}
	name := strings.Clone(c.Params("name"))
	ctx, cancel := s.ctx(c)
	defer cancel()
	acc, err := s.deps.Accounts.Delete(ctx, name)
	if err != nil {
		return err
	}
	s.record(c, "account.delete", "", fiber.Map{"name": acc.Name, "role": acc.Role, "api_keys": acc.Keys}, nil)
	return c.SendStatus(fiber.StatusNoContent)
}

// createKey answers POST /admin/accounts/{name}/keys with a new API key,
// shown this once.
func (s *API) createKey(c *fiber.Ctx) error {
	if err := s.accountsOrUnavailable(); err != nil {
		return err
	}
	name := strings.Clone(c.Params("name"))
	ctx, cancel := s.ctx(c)
	defer cancel()
	key, prefix, err := s.deps.Accounts.NewKey(ctx, name)
	if err != nil {
		return err
	}
	s.record(c, "apikey.create", "", nil, fiber.Map{"account": name, "prefix": prefix})
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"account": name, "prefix": prefix, "key": key})
}

// revokeKey answers DELETE /admin/keys/{prefix}.
func (s *API) revokeKey(c *fiber.Ctx) error {
	if err := s.accountsOrUnavailable(); err != nil {
		return err
	}
	prefix := strings.Clone(c.Params("prefix"))
	if len(prefix) != 12 || strings.Trim(prefix, "0123456789abcdef") != "" {
		return kit.NewProblem(fiber.StatusNotFound, "not_found", "no such API key")
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	owner, err := s.deps.Accounts.RevokeKey(ctx, prefix)
	if err != nil {
		return err
	}
	s.record(c, "apikey.revoke", "", fiber.Map{"account": owner, "prefix": prefix}, nil)
	return c.SendStatus(fiber.StatusNoContent)
}
