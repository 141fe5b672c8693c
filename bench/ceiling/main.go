// Command ceiling is the HTTP ceiling of the benchmarks: a minimal fiber
// app that answers a constant JSON body, on the anteroom edge's own fiber
// configuration (web.FiberConfig). What differs: no middleware (metrics,
// access log, recover, request ids, the entry cap) and no work. What
// anteroom's status and join reach relative to it is what anteroom's own
// work, middleware included, costs.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/gofiber/fiber/v2"

	"github.com/anteroom/anteroom/web"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	app := fiber.New(web.FiberConfig(slog.Default(), nil))
	body := []byte(`{"state":"waiting","position":1234,"ahead":1233,"eta_seconds":12,"poll_after_ms":3000}`)
	handler := func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(body)
	}
	app.Get("/*", handler)
	app.Post("/*", handler)
	if err := app.Listen(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
}
