package web

import (
	"bytes"
	_ "embed"
	"strconv"
	"strings"

	"github.com/anteroom/anteroom/event"
	"github.com/gofiber/fiber/v2"
)

// The pages are single self-contained HTML files: styles and scripts
// inline, no third-party requests, no build step. Everything dynamic comes
// from the JSON API.
var (
	//go:embed assets/room.html
	roomHTML []byte
	//go:embed assets/console.html
	consoleHTML []byte
)

// langMarker in room.html is replaced by the page's language.
const langMarker = "{{lang}}"

// Languages of the waiting room, as HTML lang values.
const (
	langEnglish = "en"
	langChinese = "zh-Hans"
)

// pageCSP allows the pages' own inline script and style, same-origin
// scripts (the proof-of-work solver) and same-origin requests only. The
// pages build every dynamic text with textContent.
const pageCSP = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func setPageHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderContentSecurityPolicy, pageCSP)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
}

// page serves the waiting room in the language the browser prefers
// (English or Chinese; ?lang=en|zh overrides). The script embeds both
// string tables, so the visible switch needs no reload.
func (s *Server) page(c *fiber.Ctx) error {
	if !event.ValidID(c.Params("id")) {
		return errUnknownEvent
	}
	lang := pageLang(c.Query("lang"), c.Get(fiber.HeaderAcceptLanguage))
	setPageHeaders(c)
	c.Set(fiber.HeaderContentSecurityPolicy, s.pageCSPFor(c.Params("id")))
	c.Set(fiber.HeaderCacheControl, "public, max-age=60")
	c.Vary(fiber.HeaderAcceptLanguage)
	before, after, _ := bytes.Cut(roomHTML, []byte(langMarker))
	c.Response().SetBodyRaw(nil)
	_, _ = c.Write(before)
	_, _ = c.WriteString(lang)
	_, _ = c.Write(after)
	return nil
}

// consolePage serves the staff console. It holds no secret: the console
// signs in through POST /admin/session.
func (s *Server) consolePage(c *fiber.Ctx) error {
	setPageHeaders(c)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(consoleHTML)
}

// pageLang picks the waiting room's language: an explicit "en" or "zh"
// query wins; otherwise the Accept-Language entry with the highest q among
// English and Chinese; English when neither is listed.
func pageLang(query, acceptLanguage string) string {
	switch strings.ToLower(query) {
	case "zh":
		return langChinese
	case "en":
		return langEnglish
	}
	best, bestQ := langEnglish, 0.0
	for entry := range strings.SplitSeq(acceptLanguage, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(entry), ";")
		primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			q = f
		}
		var lang string
		switch primary {
		case "zh":
			lang = langChinese
		case "en":
			lang = langEnglish
		default:
			continue
		}
		if q > bestQ {
			best, bestQ = lang, q
		}
	}
	return best
}
