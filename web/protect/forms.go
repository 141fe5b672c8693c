package protect

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// The basic page (the waiting room without JavaScript) joins and claims
// with plain HTML forms, which any other site can also post to a
// shopper's browser. A form post is let on only when all of these hold:
//
//   - the browser says it came from this site: Sec-Fetch-Site, when sent,
//     is same-origin, and Origin, when sent, is this site's own (the basic
//     page is served with Referrer-Policy: same-origin, so its own posts
//     carry their origin rather than "null");
//   - it carries the form token of this event and caller, an HMAC under a
//     key derived from the edge secret: another site cannot read it from
//     the page, nor make one;
//   - and, underneath, the cookies that name the caller and hold the ticket
//     and the admission are SameSite=Lax: a cross-site post does not carry
//     them at all.
//
// The staff console binds its CSRF token to its session the same way
// (staffapi's console session); here the caller's identity is the binding.

// FormField is the name of the form token's field in the basic page's
// forms.
const FormField = "form"

// formKey keys form tokens.
type formKey []byte

// newFormKey derives the form-token key from the edge secret, with a
// label of its own (newPoWKey derives the challenge key with another).
func newFormKey(secret []byte) formKey {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("anteroom form v1"))
	return m.Sum(nil)
}

func (k formKey) token(ev, user string) string {
	m := hmac.New(sha256.New, k)
	for _, p := range []string{"f1", ev, user} {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// FormToken returns the form token of the basic page's forms for user in
// event ev: the same on every node (it is keyed by the edge secret),
// 256 bits, never the same for another user or event.
func (s *Edge) FormToken(ev, user string) string { return s.form.token(ev, user) }

// errCrossSite and errBadForm refuse a form post (403 forbidden).
var (
	errCrossSite = kit.NewProblem(fiber.StatusForbidden, "forbidden", "this form was sent from another site")
	errBadForm   = kit.NewProblem(fiber.StatusForbidden, "forbidden", "this form's token is missing or is not this visitor's; reload the page and send it again")
)

// CheckForm lets on a basic-page form post of user in event ev, or
// returns the 403 problem to answer: sent from another site
// (Sec-Fetch-Site or Origin), or a form token (FormField) that is not
// FormToken(ev, user). The token is read from the POST form body only,
// never from the query string, which links, Referer headers and logs
// carry elsewhere.
func (s *Edge) CheckForm(c *fiber.Ctx, ev, user string) error {
	if site := c.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return errCrossSite
	}
	if origin := c.Get(fiber.HeaderOrigin); origin != "" && origin != c.Protocol()+"://"+c.Hostname() {
		return errCrossSite
	}
	token := formBodyValue(c, FormField)
	if token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.form.token(ev, user))) != 1 {
		return errBadForm
	}
	return nil
}

// formBodyValue returns the field name of the request's form body
// (urlencoded or multipart), "" when absent. Unlike fiber's FormValue it
// never reads the query string.
func formBodyValue(c *fiber.Ctx, name string) string {
	req := c.Request()
	if v := req.PostArgs().Peek(name); len(v) > 0 {
		return string(v)
	}
	if mf, err := req.MultipartForm(); err == nil {
		if vs := mf.Value[name]; len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}
