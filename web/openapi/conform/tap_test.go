package conform

import (
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gofiber/fiber/v2"
)

// TestTap: the middleware reports an answer outside the contract, passes
// one inside it, checks a HEAD as its GET without a body, and never
// changes what the client gets.
func TestTap(t *testing.T) {
	c, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	app := fiber.New()
	app.Use(c.Tap(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, err.Error())
	}))
	app.Use(func(c *fiber.Ctx) error { c.Set("X-Request-ID", "r1"); return c.Next() })
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "ok"}) })
	app.Get("/readyz", func(c *fiber.Ctx) error { return c.JSON(fiber.Map{"status": "fine"}) }) // not the contract's const
	app.Get("/metrics", func(c *fiber.Ctx) error { return fiber.ErrTeapot })                    // an undocumented status
	cases := []struct {
		method, path string
		status       int
		report       string // "" for none
	}{
		{"GET", "/healthz", 200, ""},
		{"HEAD", "/healthz", 200, ""},
		{"GET", "/readyz", 200, "GET /readyz answered 200 outside the contract"},
		{"GET", "/metrics", 418, "GET /metrics answered 418 outside the contract"},
		{"GET", "/nowhere", 404, ""},
	}
	for _, tc := range cases {
		got = nil
		resp, err := app.Test(httptest.NewRequest(tc.method, tc.path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s = %d, want %d", tc.method, tc.path, resp.StatusCode, tc.status)
		}
		mu.Lock()
		switch {
		case tc.report == "" && len(got) > 0:
			t.Errorf("%s %s reported %q", tc.method, tc.path, got)
		case tc.report != "" && (len(got) != 1 || !strings.Contains(got[0], tc.report)):
			t.Errorf("%s %s reported %q, want %q", tc.method, tc.path, got, tc.report)
		}
		mu.Unlock()
	}
}
