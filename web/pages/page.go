package pages

import (
	_ "embed"
	"strings"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// The pages are self-contained: styles inline, scripts same-origin only,
// no third-party requests (an https logo is the one exception, allowed by
// the page's CSP by its origin), no build step. Everything dynamic comes
// from the JSON API.
var (
	//go:embed assets/room.html
	roomHTML string
	//go:embed assets/room.js
	roomJS []byte
	//go:embed assets/console.html
	consoleHTML []byte
)

// LangCookie keeps the switcher's choice; the page script sets it.
const LangCookie = "anteroom_lang"

// consoleCSP allows the console's own inline script and style, same-origin
// requests, and the waiting-room preview in a same-origin frame.
const consoleCSP = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// roomCSP is the waiting room's policy: no inline script at all (the
// runtime is /assets/room.js; the page's data travels as JSON), inline
// styles for the branding, images from data: and the logo's origin only.
// frameAncestors is 'none' for the live page and 'self' for the console's
// preview.
func roomCSP(logo, frameAncestors string) string {
	img := "data:"
	if o := event.LogoOrigin(logo); o != "" {
		img += " " + o
	}
	return "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src " + img +
		"; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors " + frameAncestors
}

// SetRoomHeaders sets the headers of a waiting-room page of event id
// (every rendering of the room, with or without JavaScript, uses it): its
// Content-Security-Policy (roomCSP with the logo's origin, the captcha's
// sources and kit.FrameAncestors(cfg)) and kit.SetFrameOptions.
func (s *Pages) SetRoomHeaders(c *fiber.Ctx, id string, cfg *event.Config, logo string) {
	ancestors := kit.FrameAncestors(cfg)
	setPageHeaders(c, s.deps.WithCaptcha(id, roomCSP(logo, ancestors)))
	kit.SetFrameOptions(c, ancestors)
}

func setPageHeaders(c *fiber.Ctx, csp string) {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderContentSecurityPolicy, csp)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
}

// page serves the waiting room in the visitor's language (see negotiate)
// with the event's published branding or template. It reads the node's
// view of the sale only: no Redis.
func (s *Pages) page(c *fiber.Ctx) error {
	id := c.Params("id")
	if !event.ValidID(id) {
		return kit.ErrUnknownEvent
	}
	lang := negotiate(c.Query("lang"), c.Cookies(LangCookie), c.Get(fiber.HeaderAcceptLanguage))
	ctx, cancel := s.ctx(c)
	defer cancel()
	body, logo := s.pages.live(ctx, s.deps.Pages, s.deps.Sales, strings.Clone(id), lang, s.now(), s.cfg.Log)
	var cfg *event.Config
	if sale, ok := s.deps.Sales.Get(id); ok {
		cfg = &sale.Config
	}
	s.SetRoomHeaders(c, id, cfg, logo)
	c.Set(fiber.HeaderCacheControl, "public, max-age=60")
	c.Vary(fiber.HeaderAcceptLanguage, fiber.HeaderCookie)
	return c.Send(body)
}

// messages answers GET /e/{id}/messages?lang=: the catalog of one language
// with the event's published copy, for the page's switcher.
func (s *Pages) messages(c *fiber.Ctx) error {
	id := c.Params("id")
	if !event.ValidID(id) {
		return kit.ErrUnknownEvent
	}
	lang, ok := langByCode(strings.ToLower(c.Query("lang")))
	if !ok {
		return kit.BadRequest("lang must be one of %s", strings.Join(languageCodes(), ", "))
	}
	var copy map[string]string
	if sale, ok := s.deps.Sales.Get(id); ok {
		ctx, cancel := s.ctx(c)
		defer cancel()
		page, err := s.pages.publishedPage(ctx, s.deps.Pages, strings.Clone(id), sale.Config.PageVersion)
		if err != nil {
			s.cfg.Log.Warn("page store", "request_id", kit.RequestID(c), "err", err)
			return kit.RetryLater("degraded", "the page's messages are unavailable for a moment", 1)
		}
		if page != nil {
			copy = page.Copy[lang.Code]
		}
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=60")
	return c.JSON(fiber.Map{"lang": lang.Code, "tag": lang.Tag, "dir": dirOf(lang), "messages": s.pages.catalogs.messages(lang.Code, copy)})
}

// roomScript serves the waiting room's runtime.
func (s *Pages) roomScript(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Send(roomJS)
}

// consolePage serves the staff console. It holds no secret: the console
// signs in through POST /admin/session.
func (s *Pages) consolePage(c *fiber.Ctx) error {
	setPageHeaders(c, consoleCSP)
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(consoleHTML)
}

func dirOf(l language) string {
	if l.RTL {
		return "rtl"
	}
	return "ltr"
}

func languageCodes() []string {
	out := make([]string, len(languages))
	for i, l := range languages {
		out[i] = l.Code
	}
	return out
}

//go:embed assets/report.html
var reportHTML []byte

//go:embed assets/sweep.html
var sweepHTML []byte

// sweepPage serves the console's sweep page: it reads the event id from
// its query, the groups from GET /admin/events/{id}/sweep and cancels
// with POST /admin/events/{id}/cancellations, with the console session
// and its CSRF token (operator).
func (s *Pages) sweepPage(c *fiber.Ctx) error {
	setPageHeaders(c, consoleCSP)
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(sweepHTML)
}

// reportPage serves the console's report page; it reads the event id from
// its query and the figures from the JSON API with the console session.
func (s *Pages) reportPage(c *fiber.Ctx) error {
	setPageHeaders(c, consoleCSP)
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(reportHTML)
}
