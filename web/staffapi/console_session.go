package staffapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Console sessions. The staff console signs in once with the admin token
// and then holds a stateless session cookie:
//
//	nonce "." expiry (unix seconds) "." HMAC-SHA256(key, nonce "." expiry)
//	nonce "." expiry "." gen "." account "." HMAC-SHA256(key, nonce, expiry, account, gen)
//
// (the second for an account: gen is the account's incarnation, so a
// session ends when the account is deleted, or its password or role
// changes, even if the name is created again), where key is derived from the admin token, so rotating the token signs
// every console out and no server keeps session state. The cookie is
// HttpOnly, SameSite=Strict, scoped to /admin and Secure under TLS.
//
// A cookie is ambient authority, so every state change made with it must
// also carry the session's CSRF token in the X-CSRF-Token header. The token
// is HMAC(key, "csrf" nonce): bound to the session, handed to the console in
// the JSON of sign-in (and of GET /admin/session after a reload), which
// another origin cannot read. It is compared in constant time.
const (
	ConsoleCookie = "anteroom_admin"
	consolePath   = "/admin"
	consoleTTL    = 8 * time.Hour
	CSRFHeader    = "X-CSRF-Token"
)

// consoleSession is one signed-in console.
type consoleSession struct {
	nonce   string
	expires time.Time
	// account is the staff account signed in; empty for a sign-in with
	// the admin (bootstrap) token.
	account string
	// gen is the account's incarnation (staff.Account.Gen) when it
	// signed in: the session is honoured only while it still is.
	gen string
}

// consoleKey derives the signing key of console sessions from the admin
// token.
func consoleKey(adminToken string) []byte {
	m := hmac.New(sha256.New, []byte(adminToken))
	m.Write([]byte("anteroom console session v1"))
	return m.Sum(nil)
}

func mac(key []byte, parts ...string) string {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newConsoleSession starts a session that expires ttl after now.
func newConsoleSession(now time.Time, ttl time.Duration) (consoleSession, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return consoleSession{}, err
	}
	return consoleSession{nonce: base64.RawURLEncoding.EncodeToString(b[:]), expires: now.Add(ttl).Truncate(time.Second)}, nil
}

// encode returns the cookie value of s signed with key.
func (s consoleSession) encode(key []byte) string {
	exp := strconv.FormatInt(s.expires.Unix(), 10)
	if s.account != "" {
		return s.nonce + "." + exp + "." + s.gen + "." + s.account + "." + mac(key, "session", s.nonce, exp, s.account, s.gen)
	}
	return s.nonce + "." + exp + "." + mac(key, "session", s.nonce, exp)
}

// csrf returns the CSRF token bound to s.
func (s consoleSession) csrf(key []byte) string { return mac(key, "csrf", s.nonce) }

// parseConsoleSession verifies a cookie value; ok is false for a malformed,
// forged or expired one. A cookie of an account made before incarnations
// were kept (nonce.expiry.account.mac) reads with gen "": it matches only
// an account that has none either.
func parseConsoleSession(key []byte, raw string, now time.Time) (s consoleSession, ok bool) {
	if len(raw) > 200 {
		return consoleSession{}, false
	}
	parts := strings.Split(raw, ".")
	if len(parts) < 3 || len(parts[0]) != 22 {
		return consoleSession{}, false
	}
	nonce, exp, sig, mid := parts[0], parts[1], parts[len(parts)-1], parts[2:len(parts)-1]
	s = consoleSession{nonce: nonce}
	switch {
	case len(mid) == 0:
		ok = hmac.Equal([]byte(sig), []byte(mac(key, "session", nonce, exp)))
	case len(mid) >= 2 && hmac.Equal([]byte(sig), []byte(mac(key, "session", nonce, exp, strings.Join(mid[1:], "."), mid[0]))):
		s.gen, s.account, ok = mid[0], strings.Join(mid[1:], "."), true
	default: // the format without an incarnation
		s.account = strings.Join(mid, ".")
		ok = hmac.Equal([]byte(sig), []byte(mac(key, "session", nonce, exp, s.account)))
	}
	if !ok || len(mid) > 0 && s.account == "" {
		return consoleSession{}, false
	}
	sec, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !now.Before(time.Unix(sec, 0)) {
		return consoleSession{}, false
	}
	s.expires = time.Unix(sec, 0)
	return s, true
}

// safeMethod reports whether an HTTP method changes nothing.
func safeMethod(m string) bool {
	return m == fiber.MethodGet || m == fiber.MethodHead || m == fiber.MethodOptions
}

// staffAuth authorises a staff request: the admin bearer token (see
// checkAdminToken: throttled per address), or a console session cookie
// that is still signed in on the shared session set plus, on every state
// change, its CSRF token. It answers nil or the problem to return (401
// unauthenticated, 403 forbidden, 429 rate_limited, 503 degraded).
func (s *API) staffAuth(c *fiber.Ctx) error {
	if s.cfg.AdminToken == "" {
		return errAdminDisabled
	}
	if tok := kit.Bearer(c); tok != "" {
		if strings.HasPrefix(tok, apiKeyPrefix) && s.deps.Accounts != nil {
			return s.checkAPIKey(c, tok)
		}
		if err := s.checkAdminToken(c, tok, false); err != nil {
			return err
		}
		return s.setStaff(c, "", "")
	}
	raw := c.Cookies(ConsoleCookie)
	if raw == "" {
		return kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "the admin API needs the admin bearer token or a console session")
	}
	key := consoleKey(s.cfg.AdminToken)
	sess, ok, err := s.liveConsoleSession(c, key, raw)
	if err != nil {
		return err
	}
	if !ok {
		return kit.NewProblem(fiber.StatusUnauthorized, "unauthenticated", "the console session is invalid, expired or signed out; sign in again")
	}
	if !safeMethod(c.Method()) && subtle.ConstantTimeCompare([]byte(c.Get(CSRFHeader)), []byte(sess.csrf(key))) != 1 {
		return kit.NewProblem(fiber.StatusForbidden, "forbidden", "a change made with the console session needs its CSRF token in the "+CSRFHeader+" header")
	}
	return s.setStaff(c, sess.account, sess.gen)
}

// liveConsoleSession verifies a session cookie and asks the shared session set
// whether it is still signed in: a sign-out on any node ends it.
func (s *API) liveConsoleSession(c *fiber.Ctx, key []byte, raw string) (consoleSession, bool, error) {
	sess, ok := parseConsoleSession(key, raw, s.now())
	if !ok {
		return consoleSession{}, false, nil
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	active, err := s.deps.StaffSessions.Active(ctx, sess.nonce)
	if err != nil {
		s.cfg.Log.Warn("staff sessions", "request_id", kit.RequestID(c), "err", err)
		return consoleSession{}, false, errStaffUnavailable
	}
	return sess, active, nil
}
