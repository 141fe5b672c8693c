package kit

import "github.com/gofiber/fiber/v2"

// SetCookie sets cookie ck, which the waiting room needs on later
// requests of the same page (the ticket, the admission, the visitor id),
// with the SameSite and Secure attributes the request's sale asks for:
//
//   - by default SameSite=Lax, and Secure when the request came over
//     https;
//   - SameSite=None; Secure when the sale may be embedded by another site
//     (event.Config.FrameAncestors) and the request came over https: a
//     room framed by a shop's page on another site is a third-party
//     context, where browsers send only SameSite=None cookies, and they
//     take those only when Secure. Over plain http (loopback
//     development) the cookie stays Lax: a browser drops SameSite=None
//     without Secure.
//
// A browser that blocks third-party cookies altogether (Safari, Firefox's
// strict mode, Chrome with the setting on) still drops them in a frame:
// the docs (integrate.md, "Embedding the room") say so.
func SetCookie(c *fiber.Ctx, ck *fiber.Cookie) {
	https := c.Protocol() == "https"
	ck.Secure, ck.SameSite = https, fiber.CookieSameSiteLaxMode
	if sale, ok := LoadedSale(c); ok && https && sale.Config.Embeddable() {
		ck.SameSite = fiber.CookieSameSiteNoneMode
	}
	c.Cookie(ck)
}
