package pages

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

// clientJS is the client library for shops' apps and pages: an ES module
// without dependencies (join, polling, backoff, idempotent claims). It and
// clientTypes are generated from the TypeScript package in js/anteroom
// (`npm run embed` there) and committed, so the node builds with Go alone;
// TestClientPackageBuilt (internal/jsclient) fails when they drift.
//
//go:embed assets/anteroom.js
var clientJS []byte

// clientTypes is clientJS's TypeScript declarations, which the module
// names with a @ts-self-types comment: a TypeScript app (or Deno) that
// imports the node's copy gets the types of that very version.
//
//go:embed assets/anteroom.d.ts
var clientTypes []byte

// clientScript serves /assets/anteroom.js.
func (s *Pages) clientScript(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Send(clientJS)
}

// clientTypesFile serves /assets/anteroom.d.ts.
func (s *Pages) clientTypesFile(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/typescript; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Send(clientTypes)
}
