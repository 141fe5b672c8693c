package web

import (
	"strings"
	"time"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// JWKSPath is where the admission token public keys are served.
const JWKSPath = "/.well-known/jwks.json"

// JWKSMaxAge is how long the JWKS answer lets HTTP caches (a CDN, a
// gateway honouring Cache-Control) keep it: its Cache-Control max-age,
// with no stale-while-revalidate. A key rotation publishes the next key at
// least this long (plus the nodes' key reload) before signing with it
// (`anteroom keys promote`), so no cache still holds a set without it.
const JWKSMaxAge = 300 * time.Second

// discoveryJSON is the subset of OpenID Provider Metadata (OpenID Connect
// Discovery 1.0, section 3) that lets a gateway or a JOSE library find the
// keys and the rules of admission tokens. anteroom is not an OpenID
// provider: it has no authorization endpoint; the document exists so that
// tools which discover keys from an issuer need no custom code.
type discoveryJSON struct {
	Issuer                 string   `json:"issuer"`
	JWKSURI                string   `json:"jwks_uri"`
	SigningAlgs            []string `json:"id_token_signing_alg_values_supported"`
	ResponseTypesSupported []string `json:"response_types_supported"`
	SubjectTypesSupported  []string `json:"subject_types_supported"`
	ClaimsSupported        []string `json:"claims_supported"`
}

// absoluteURL reports whether s is an http or https URL.
func absoluteURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// openIDConfiguration serves /.well-known/openid-configuration. issuer is
// the iss of admission tokens. jwks_uri is built from it, never from the
// request (Host and X-Forwarded-Host are the client's to choose, and a
// cached document pointing at a hostile host would hand gateways its
// keys). Discovery exists only for an http(s) issuer, the recommended
// ANTEROOM_ISSUER (the public base URL): OIDC Discovery finds the document
// at issuer + /.well-known/openid-configuration, which a bare name such as
// the default "anteroom" is not, so without one the path answers 404 and
// gateways are configured with JWKSPath directly.
func (s *Server) openIDConfiguration(c *fiber.Ctx) error {
	if !absoluteURL(s.cfg.Issuer) {
		return kit.NewProblem(fiber.StatusNotFound, "not_found", "OIDC discovery is published only when ANTEROOM_ISSUER is the public base URL (https://...); the keys are at "+JWKSPath)
	}
	doc := discoveryJSON{
		Issuer:                 s.cfg.Issuer,
		JWKSURI:                strings.TrimRight(s.cfg.Issuer, "/") + JWKSPath,
		SigningAlgs:            s.cfg.SigningAlgorithms,
		ResponseTypesSupported: []string{"id_token"},
		SubjectTypesSupported:  []string{"public"},
		ClaimsSupported:        []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "event", "pos"},
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	return c.JSON(doc)
}
