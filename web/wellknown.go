package web

import (
	"strings"

	"github.com/gofiber/fiber/v2"
)

// JWKSPath is where the admission token public keys are served.
const JWKSPath = "/.well-known/jwks.json"

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
// the iss of admission tokens. When it is an http(s) URL (the recommended
// ANTEROOM_ISSUER: the public base URL), jwks_uri is built from it and the
// document is cacheable; otherwise jwks_uri is built from the request's
// scheme and host, which a client can influence (X-Forwarded-Host), so that
// answer must never be cached by a shared cache.
func (s *Server) openIDConfiguration(c *fiber.Ctx) error {
	doc := discoveryJSON{
		Issuer:                 s.cfg.Issuer,
		SigningAlgs:            s.cfg.SigningAlgorithms,
		ResponseTypesSupported: []string{"id_token"},
		SubjectTypesSupported:  []string{"public"},
		ClaimsSupported:        []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "event", "pos"},
	}
	if absoluteURL(s.cfg.Issuer) {
		doc.JWKSURI = strings.TrimRight(s.cfg.Issuer, "/") + JWKSPath
		c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	} else {
		doc.JWKSURI = c.BaseURL() + JWKSPath
		c.Set(fiber.HeaderCacheControl, "no-store")
	}
	return c.JSON(doc)
}
