package kit

import "github.com/gofiber/fiber/v2"

// TicketCookie names the cookie that holds the queue ticket of event ev.
func TicketCookie(ev string) string { return "anteroom_t_" + ev }

// RawTicket returns the queue ticket of event ev a request carries: the
// bearer token (apps) or the ticket cookie (browsers); "" for none.
func RawTicket(c *fiber.Ctx, ev string) string {
	if raw := Bearer(c); raw != "" {
		return raw
	}
	return c.Cookies(TicketCookie(ev))
}

// CaptchaHeader carries the captcha widget's token on join; the public
// event names it.
const CaptchaHeader = "X-Captcha"
