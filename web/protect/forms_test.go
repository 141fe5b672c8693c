package protect

import (
	"bytes"
	"mime/multipart"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestCheckForm: a basic-page form post is let on only with the form token
// of its event and caller, and never when the browser says another site
// sent it.
func TestCheckForm(t *testing.T) {
	e := &Edge{form: newFormKey(limSecret)}
	tok := e.FormToken("ev", "alice")
	if len(tok) != 43 {
		t.Errorf("form token %q: want 256 bits, base64url", tok)
	}
	for _, other := range []string{e.FormToken("ev", "bob"), e.FormToken("ev2", "alice"), (&Edge{form: newFormKey(make([]byte, 32))}).FormToken("ev", "alice")} {
		if other == tok {
			t.Errorf("another user, event or key made the same token %q", tok)
		}
	}
	const self = "http://shop.example"
	cases := []struct {
		name, token, origin, site string
		ok                        bool
	}{
		{"same origin", tok, self, "same-origin", true},
		{"no Origin, no Sec-Fetch-Site (an old browser)", tok, "", "", true},
		{"no token", "", self, "same-origin", false},
		{"another user's token", e.FormToken("ev", "bob"), self, "same-origin", false},
		{"a truncated token", tok[:20], self, "same-origin", false},
		{"another site's Origin", tok, "https://evil.example", "", false},
		{"Origin null", tok, "null", "", false},
		{"the other scheme", tok, "https://shop.example", "", false},
		{"same-site, another origin", tok, "", "same-site", false},
		{"cross-site", tok, "", "cross-site", false},
		{"typed in the address bar", tok, "", "none", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			app := fiber.New()
			app.Post("/", func(c *fiber.Ctx) error {
				if err := e.CheckForm(c, "ev", "alice"); err != nil {
					return c.Status(fiber.StatusForbidden).SendString(err.Error())
				}
				return c.SendStatus(fiber.StatusNoContent)
			})
			req := httptest.NewRequest("POST", self+"/", strings.NewReader(url.Values{FormField: {tc.token}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.site != "" {
				req.Header.Set("Sec-Fetch-Site", tc.site)
			}
			resp, err := app.Test(req)
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.StatusCode == fiber.StatusNoContent; got != tc.ok {
				t.Errorf("let on %v (status %d), want %v", got, resp.StatusCode, tc.ok)
			}
		})
	}
}

// TestCheckFormBodyOnly: the form token counts in an urlencoded or a
// multipart body, never in the query string.
func TestCheckFormBodyOnly(t *testing.T) {
	e := &Edge{form: newFormKey(limSecret)}
	tok := e.FormToken("ev", "alice")
	app := fiber.New()
	app.Post("/", func(c *fiber.Ctx) error {
		if err := e.CheckForm(c, "ev", "alice"); err != nil {
			return c.SendStatus(fiber.StatusForbidden)
		}
		return c.SendStatus(fiber.StatusNoContent)
	})
	var mp bytes.Buffer
	w := multipart.NewWriter(&mp)
	_ = w.WriteField(FormField, tok)
	_ = w.Close()
	for _, tc := range []struct {
		name, query, ctype, body string
		ok                       bool
	}{
		{"urlencoded body", "", "application/x-www-form-urlencoded", FormField + "=" + tok, true},
		{"multipart body", "", w.FormDataContentType(), mp.String(), true},
		{"query only", "?" + FormField + "=" + tok, "application/x-www-form-urlencoded", "", false},
		{"query, empty body field", "?" + FormField + "=" + tok, "application/x-www-form-urlencoded", FormField + "=", false},
		{"body without a form content type", "", "text/plain", FormField + "=" + tok, false},
	} {
		req := httptest.NewRequest("POST", "/"+tc.query, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.ctype)
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.StatusCode == fiber.StatusNoContent; got != tc.ok {
			t.Errorf("%s: let on %v (status %d), want %v", tc.name, got, resp.StatusCode, tc.ok)
		}
	}
}
