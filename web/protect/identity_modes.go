package protect

import (
	"fmt"
	"strings"
	"time"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Consumer-side interfaces of the identity modes: only what they call.
type (
	// visitorCookies signs and verifies visitor ids; *tokens.Visitors.
	visitorCookies interface {
		New() (id, cookie string, err error)
		Verify(cookie string) (id string, err error)
	}
	// userTokens verifies a shop's user tokens; *tokens.UserVerifier.
	userTokens interface {
		Verify(raw string, now time.Time) (user string, err error)
	}
)

// IdentityMode says how the edge names its callers.
type IdentityMode string

// Identity modes.
const (
	// IdentityAnonymous names visitors by a signed cookie (VisitorIdentity).
	IdentityAnonymous IdentityMode = "anonymous"
	// IdentityJWT names users by the shop's user token (UserTokenIdentity).
	IdentityJWT IdentityMode = "jwt"
	// IdentityHeader names users by a gateway's header, believed from
	// trusted proxies only (NewHeaderIdentity).
	IdentityHeader IdentityMode = "header"
)

// ParseIdentityMode reads an identity mode: anonymous, jwt or header.
func ParseIdentityMode(s string) (IdentityMode, error) {
	switch m := IdentityMode(s); m {
	case IdentityAnonymous, IdentityJWT, IdentityHeader:
		return m, nil
	}
	return "", fmt.Errorf("identity %q: want anonymous, jwt or header", s)
}

// VisitorCookie is the default name of the anonymous visitor cookie.
const VisitorCookie = "anteroom_visitor"

// VisitorIdentity names anonymous visitors (ANTEROOM_IDENTITY=anonymous) by
// a signed cookie. On join a caller without a valid cookie is given a new
// random visitor id and the cookie is set (HttpOnly, Path=/, SameSite and
// Secure by kit.SetCookie: Lax, or None for a sale embedded by another
// site over TLS); everywhere else a missing or
// invalid cookie is 401. The visitor id alone is the user: per-user limits
// then hold per browser, which suits queue-only use, not a sale where
// limits must bind people.
//
// A VisitorIdentity is safe for concurrent use once built; Visitors is
// required.
type VisitorIdentity struct {
	// Visitors signs and verifies the cookie, normally a *tokens.Visitors
	// built from the ticket secret so every node accepts every cookie.
	Visitors visitorCookies
	// Cookie names the cookie.
	//
	// Default: anteroom_visitor
	Cookie string
	// MaxAge is how long the browser keeps the cookie.
	//
	// Default: 30 days
	MaxAge time.Duration
}

// User returns the visitor id of the request's cookie. With mint set, a
// caller without a valid cookie gets a new id and the cookie is set on the
// response.
func (v VisitorIdentity) User(c *fiber.Ctx, mint bool) (string, error) {
	name := v.Cookie
	if name == "" {
		name = VisitorCookie
	}
	raw := c.Cookies(name)
	if raw != "" {
		id, err := v.Visitors.Verify(raw)
		if err == nil {
			return strings.Clone(id), nil // the id points into a reused buffer
		}
		if !mint {
			return "", kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "the visitor cookie is invalid")
		}
	}
	if !mint {
		return "", kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "missing visitor cookie; join the queue first")
	}
	id, cookie, err := v.Visitors.New()
	if err != nil {
		return "", err
	}
	maxAge := v.MaxAge
	if maxAge <= 0 {
		maxAge = 30 * 24 * time.Hour
	}
	kit.SetCookie(c, &fiber.Cookie{ // Lax, or None when the request's sale is embedded by another site
		Name: name, Value: cookie, Path: "/", HTTPOnly: true, MaxAge: int(maxAge / time.Second),
	})
	return id, nil
}

// UserTokenHeader is the default header of the shop's user token.
const UserTokenHeader = "X-User-Token"

// UserTokenIdentity names callers by the shop's own signed user token
// (ANTEROOM_IDENTITY=jwt): the token's sub, once Verifier accepts it.
//
// The token is read from its own header, never from Authorization, which
// carries queue tickets and admission tokens; a "Bearer " prefix is
// allowed. Nothing else names the caller: an X-User-ID header is ignored,
// so a spoofed one never counts. A token header sent on several lines is
// 400. A missing or invalid token is 401; a valid
// token whose sub is not 1 to 128 printable ASCII characters without spaces
// is 401 too, since it cannot name a user here.
//
// A UserTokenIdentity is safe for concurrent use; Verifier is required.
type UserTokenIdentity struct {
	// Verifier checks the token, normally a *tokens.UserVerifier loaded
	// from ANTEROOM_USER_JWKS.
	Verifier userTokens
	// Header carries the user token.
	//
	// Default: X-User-Token
	Header string
	// Now is the clock tokens are checked against.
	//
	// Default: time.Now
	Now func() time.Time
}

// User returns the sub of the request's verified user token. mint is
// ignored: a user token either names the caller or does not.
func (u UserTokenIdentity) User(c *fiber.Ctx, _ bool) (string, error) {
	user, _, err := u.UserClaims(c, nil)
	return user, err
}

// claimVerifier also reads claims of the token it verifies;
// *tokens.UserVerifier.
type claimVerifier interface {
	VerifyClaims(raw string, now time.Time, names []string) (user string, values map[string][]string, err error)
}

// UserClaims is User that also returns the values of the token's claims
// names (see tokens.UserVerifier.VerifyClaims), from the same single
// verification: join reads a lane's claim with it. None when names is
// empty or the Verifier reads no claims.
func (u UserTokenIdentity) UserClaims(c *fiber.Ctx, names []string) (string, map[string][]string, error) {
	name := u.Header
	if name == "" {
		name = UserTokenHeader
	}
	raw, err := oneHeader(c, name)
	if err != nil {
		return "", nil, err
	}
	raw = strings.TrimSpace(raw)
	if len(raw) > 7 && strings.EqualFold(raw[:7], "bearer ") {
		raw = strings.TrimSpace(raw[7:])
	}
	if raw == "" {
		return "", nil, kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "missing "+name+" header")
	}
	now := time.Now
	if u.Now != nil {
		now = u.Now
	}
	var user string
	var values map[string][]string
	if cv, ok := u.Verifier.(claimVerifier); ok && len(names) > 0 {
		user, values, err = cv.VerifyClaims(raw, now(), names)
	} else {
		user, err = u.Verifier.Verify(raw, now())
	}
	if err != nil {
		return "", nil, kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "the "+name+" is invalid or expired")
	}
	if !validUser(user) {
		return "", nil, kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "the "+name+" names no usable user id")
	}
	return strings.Clone(user), values, nil
}
