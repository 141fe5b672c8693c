package web

import (
	"testing"

	"github.com/gofiber/fiber/v2"
)

// mustNew is New for tests, failing tb on an error.
func mustNew(tb testing.TB, cfg Config, deps Deps) *fiber.App {
	tb.Helper()
	app, err := New(cfg, deps)
	if err != nil {
		tb.Fatal(err)
	}
	return app
}

// TestNewRefusesBadProxy: a trusted proxy that is neither an address nor
// a CIDR range stops the edge from starting. New used to drop it silently
// (the node checks its setting earlier, but New is the one place that
// parses it).
func TestNewRefusesBadProxy(t *testing.T) {
	if _, err := New(Config{TrustedProxies: []string{"10.0.0.0/8", "10.0.0.300"}}, Deps{}); err == nil {
		t.Fatal("New accepted the trusted proxy 10.0.0.300")
	}
	mustNew(t, Config{TrustedProxies: []string{"10.0.0.0/8", "::1"}}, Deps{})
}
