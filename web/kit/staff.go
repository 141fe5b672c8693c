package kit

import (
	"github.com/anteroom/anteroom/staff"
	"github.com/gofiber/fiber/v2"
)

// Staff is who made a staff request.
type Staff struct {
	// Name is the account name; TokenName for the admin token.
	Name string
	// Role is the effective role; empty for the admin token once an
	// admin account exists.
	Role staff.Role
	// Token: the admin (bootstrap) token, bearer or its console session.
	Token bool
}

// TokenName is who the audit names for the admin token.
const TokenName = "admin-token"

const staffLocal = "anteroom.staff"

// SetStaff records who authenticated request c, for StaffOf.
func SetStaff(c *fiber.Ctx, who Staff) { c.Locals(staffLocal, who) }

// StaffOf returns who authenticated request c (SetStaff), and false for a
// request no staff authentication ran on.
func StaffOf(c *fiber.Ctx) (Staff, bool) {
	id, ok := c.Locals(staffLocal).(Staff)
	return id, ok
}
