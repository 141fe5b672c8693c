// Command ceiling is the HTTP ceiling of the benchmarks: a minimal fiber
// app that answers a constant JSON body, with the same fiber settings the
// anteroom edge uses. What anteroom's status and join reach relative to it
// is what anteroom's own work costs.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/gofiber/fiber/v2"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	app := fiber.New(fiber.Config{DisableStartupMessage: true, BodyLimit: 16 * 1024})
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
