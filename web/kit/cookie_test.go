package kit_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// TestSetCookieSameSite: the room's cookies are SameSite=Lax, except for
// a sale that other sites may frame, over TLS: SameSite=None; Secure (a
// framed room is a third-party context). Never SameSite=None without
// Secure, which browsers drop.
func TestSetCookieSameSite(t *testing.T) {
	sales := map[string]*admission.Sale{
		"plain":  {Config: event.Config{ID: "plain"}},
		"framed": {Config: event.Config{ID: "framed", FrameAncestors: []string{"https://shop.example"}}},
	}
	app := fiber.New()
	app.Get("/events/:id", kit.LoadSale(func(id string) (*admission.Sale, bool) { s, ok := sales[id]; return s, ok }), func(c *fiber.Ctx) error {
		kit.SetCookie(c, &fiber.Cookie{Name: "t", Value: "v", Path: "/", HTTPOnly: true})
		return nil
	})
	app.Get("/nosale", func(c *fiber.Ctx) error {
		kit.SetCookie(c, &fiber.Cookie{Name: "t", Value: "v", Path: "/"})
		return nil
	})
	cases := []struct {
		path   string
		https  bool
		want   string
		secure bool
	}{
		{"/events/plain", false, "samesite=lax", false},
		{"/events/plain", true, "samesite=lax", true},
		{"/events/framed", true, "samesite=none", true},
		{"/events/framed", false, "samesite=lax", false}, // None needs Secure
		{"/nosale", true, "samesite=lax", true},
	}
	for _, tc := range cases {
		req := httptest.NewRequest("GET", tc.path, nil)
		if tc.https {
			req.Header.Set("X-Forwarded-Proto", "https")
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.ToLower(resp.Header.Get("Set-Cookie"))
		if !strings.Contains(got, tc.want) || strings.Contains(got, "secure") != tc.secure {
			t.Errorf("%s (https %v): Set-Cookie %q, want %s and secure %v", tc.path, tc.https, got, tc.want, tc.secure)
		}
	}
}
