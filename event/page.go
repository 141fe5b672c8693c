package event

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Page is a sale's own waiting-room page: its branding, its copy and
// optionally a whole page template. Staff save it as a draft (Pages.Draft),
// preview it in every state, then publish it (Pages.Published); the live
// page only ever shows the published one.
//
// The zero Page is the built-in page with anteroom's colours.
type Page struct {
	// Name is the shop's name shown in the page header.
	//
	// Default: "anteroom"
	Name string `json:"name,omitempty"`
	// LogoURL is the shop's logo: an https URL, or a data:image URL of at
	// most MaxLogoDataBytes. The page's Content-Security-Policy allows
	// images from this one origin only.
	LogoURL string `json:"logo_url,omitempty"`
	// Colors are #rrggbb values.
	Colors Colors `json:"colors,omitzero"`
	// Copy overrides messages of the catalogs, per language (en, zh, es,
	// ja, de, hi, ar) and message key.
	Copy map[string]map[string]string `json:"copy,omitempty"`
	// Template, when set, replaces the whole built-in page: Go
	// html/template text with the variables listed in docs/api.md.
	Template string `json:"template,omitempty"`
}

// Colors are a page's colours; empty fields keep the built-in ones
// (DefaultPrimary, DefaultBackground, DefaultText). Page.Validate refuses
// colours whose contrast falls short of WCAG 2.2 AA (CheckContrast).
type Colors struct {
	// Primary colours buttons, links and the progress bar.
	Primary string `json:"primary,omitempty"`
	// Background is the page's background.
	Background string `json:"background,omitempty"`
	// Text is the page's text colour.
	Text string `json:"text,omitempty"`
}

// Limits on a Page. The whole page JSON must also fit the 16 KB request
// body limit.
const (
	MaxLogoDataBytes   = 6 * 1024 // a data: logo, as written
	MaxLogoURLBytes    = 2048     // an https logo URL
	MaxTemplateBytes   = 12 * 1024
	MaxPageNameRunes   = 80
	MaxCopyRunes       = 600
	MaxCopyPerLanguage = 200
)

// logoHost is a host a CSP source may name: no wildcards, no separators.
var logoHost = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$`)

var hexColor = regexp.MustCompile(`^#[0-9a-f]{6}$`)

// logoData matches the data: URLs a logo may be: base64 raster images or SVG
// (an <img> runs no script in an SVG).
var logoData = regexp.MustCompile(`^data:image/(png|jpeg|gif|webp|svg\+xml);base64,([A-Za-z0-9+/]+={0,2})$`)

// Validate checks the parts of p that need no message catalog (see
// web for copy keys and the template) and returns an error wrapping
// ErrInvalid naming the field.
func (p *Page) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: page: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	if utf8.RuneCountInString(p.Name) > MaxPageNameRunes || strings.ContainsAny(p.Name, "\x00\r\n") {
		return bad("name must be one line of at most %d characters", MaxPageNameRunes)
	}
	if err := checkLogo(p.LogoURL); err != "" {
		return bad("logo_url %s", err)
	}
	for name, v := range map[string]string{"primary": p.Colors.Primary, "background": p.Colors.Background, "text": p.Colors.Text} {
		if v != "" && !hexColor.MatchString(v) {
			return bad("colors.%s must be #rrggbb in lowercase hex, like #0b63c4", name)
		}
	}
	if cp := p.Colors.CheckContrast(); cp != nil {
		return bad("%s", cp)
	}
	for lang, msgs := range p.Copy {
		if len(msgs) > MaxCopyPerLanguage {
			return bad("copy.%s has %d messages, at most %d", lang, len(msgs), MaxCopyPerLanguage)
		}
		for k, v := range msgs {
			if utf8.RuneCountInString(v) > MaxCopyRunes || !utf8.ValidString(v) {
				return bad("copy.%s.%s must be valid text of at most %d characters", lang, k, MaxCopyRunes)
			}
		}
	}
	if len(p.Template) > MaxTemplateBytes {
		return bad("template is %d bytes, at most %d", len(p.Template), MaxTemplateBytes)
	}
	if !utf8.ValidString(p.Template) {
		return bad("template must be UTF-8 text")
	}
	return nil
}

// checkLogo returns what is wrong with a logo URL, "" when it is fine.
func checkLogo(v string) string {
	if v == "" {
		return ""
	}
	if strings.HasPrefix(v, "data:") {
		if len(v) > MaxLogoDataBytes {
			return fmt.Sprintf("is a %d-byte data: URL, at most %d", len(v), MaxLogoDataBytes)
		}
		m := logoData.FindStringSubmatch(v)
		if m == nil {
			return "must be data:image/(png|jpeg|gif|webp|svg+xml);base64,..."
		}
		if _, err := base64.StdEncoding.DecodeString(m[2]); err != nil {
			return "has invalid base64"
		}
		return ""
	}
	if len(v) > MaxLogoURLBytes {
		return fmt.Sprintf("is %d bytes, at most %d", len(v), MaxLogoURLBytes)
	}
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "https" || !logoHost.MatchString(u.Host) || u.User != nil || strings.ContainsAny(v, " '\"\\;,") {
		return "must be an https URL (or a data:image URL)"
	}
	return ""
}

// LogoOrigin is the origin the page's images may come from for logo: the
// https origin ("https://cdn.example"), or "" for a data: logo or none.
func LogoOrigin(logo string) string {
	if !strings.HasPrefix(logo, "https://") {
		return ""
	}
	u, err := url.Parse(logo)
	if err != nil {
		return ""
	}
	return "https://" + u.Host
}
