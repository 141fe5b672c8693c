package kit

import "github.com/gofiber/fiber/v2"

// attestedLocal is the Locals key of the request's attested device.
type attestedLocal struct{}

// SetAttestedDevice records that the request proved it comes from the
// App Attest key id (hex): the device signal of a sale whose device
// source is attestation (protect's Signals reads it).
func SetAttestedDevice(c *fiber.Ctx, id string) { c.Locals(attestedLocal{}, id) }

// AttestedDevice returns the key id SetAttestedDevice recorded for the
// request, or "".
func AttestedDevice(c *fiber.Ctx) string {
	id, _ := c.Locals(attestedLocal{}).(string)
	return id
}
