// Package openapi holds anteroom's HTTP contract, the OpenAPI 3.1
// document openapi.yaml, and serves it (GET /openapi.yaml on the node).
//
// The document is written by hand, not generated: the handlers are fiber
// functions whose bodies and answers carry no types a generator could
// read, and the contract is meant to be read by people integrating a
// shop. Tests keep it true instead: package web's TestOpenAPIRoutes
// fails on a route the node serves that the contract lacks (and on a
// contract path nothing serves); TestOpenAPIErrorCodes here fails when
// web/kit's error table answers a code the contract's ErrorCode enum
// lacks; the handler packages' TestContractShapes compare each body's
// schema with its Go type, field by field (conform.Shape); and every node
// the node and end-to-end tests start checks each exchange it answers
// against the contract (package conform, internal/nodetest).
package openapi

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

// Path is where the node serves the contract.
const Path = "/openapi.yaml"

// Spec is the contract, OpenAPI 3.1 in YAML.
//
//go:embed openapi.yaml
var Spec []byte

// Serve answers with the contract: public and cacheable (it changes only
// with the binary).
func Serve(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/yaml")
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	return c.Send(Spec)
}
