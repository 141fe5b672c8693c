package kit

import (
	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/gofiber/fiber/v2"
)

type localKey int

const saleKey localKey = iota

// LoadSale returns the middleware of routes under /events/:id: it
// validates the :id parameter and puts the node's view of the sale, read
// with get, into the request's Locals (SaleOf). Unknown events are
// answered 404 without Redis.
func LoadSale(get func(id string) (*admission.Sale, bool)) fiber.Handler {
	return func(c *fiber.Ctx) error {
		id := c.Params("id")
		if !event.ValidID(id) {
			return ErrUnknownEvent
		}
		sale, ok := get(id)
		if !ok {
			return ErrUnknownEvent
		}
		c.Locals(saleKey, sale)
		return c.Next()
	}
}

// LoadedSale is the sale LoadSale found for request c, if it ran and
// found one.
func LoadedSale(c *fiber.Ctx) (*admission.Sale, bool) {
	sale, ok := c.Locals(saleKey).(*admission.Sale)
	return sale, ok && sale != nil
}

// SaleOf is the sale LoadSale found for request c. It panics on a route
// without LoadSale (a wiring bug, answered 500 by the recover middleware).
func SaleOf(c *fiber.Ctx) *admission.Sale { return c.Locals(saleKey).(*admission.Sale) }
