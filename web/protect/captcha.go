package protect

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// Captcha on join. An event with limits.captcha set shows the provider's
// widget on the waiting room (assets/captcha.js, loaded on demand) and
// asks join for the token it yields in the X-Captcha header. The node
// posts the token, the event's secret and the caller's address to the
// provider's siteverify endpoint over HTTPS and joins only on
// "success": true. It fails closed: no token, a refused token (wrong,
// expired, or already used — the provider remembers spent tokens, so a
// replay is refused there), or a provider that does not answer in time
// all refuse the join. The check runs after the rate limits, so refused
// floods cost no call to the provider.

// CaptchaHeader carries a captcha token on join.
const CaptchaHeader = kit.CaptchaHeader

// siteverifyURLs are the providers' verification endpoints.
var siteverifyURLs = map[string]string{
	event.CaptchaTurnstile: "https://challenges.cloudflare.com/turnstile/v0/siteverify",
	event.CaptchaHCaptcha:  "https://api.hcaptcha.com/siteverify",
}

// captchaCSP are the origins each provider's widget needs on the page:
// its script and its frame (hCaptcha also styles and calls out).
var captchaCSP = map[string]struct{ script, frame, style, connect string }{
	event.CaptchaTurnstile: {script: "https://challenges.cloudflare.com", frame: "https://challenges.cloudflare.com"},
	event.CaptchaHCaptcha: {
		script: "https://hcaptcha.com https://*.hcaptcha.com", frame: "https://hcaptcha.com https://*.hcaptcha.com",
		style: "https://hcaptcha.com https://*.hcaptcha.com", connect: "https://hcaptcha.com https://*.hcaptcha.com",
	},
}

// usedCodes are the siteverify error codes that say a token was already
// spent.
var usedCodes = []string{"timeout-or-duplicate", "already-seen-response", "invalid-or-already-seen-response"}

// captchaVerifier posts tokens to siteverify.
type captchaVerifier struct {
	client *http.Client
	// url, when set, replaces every provider's endpoint (tests and
	// development: Config.CaptchaSiteverifyURL).
	url string
}

func newCaptchaVerifier(cfg *Config) *captchaVerifier {
	timeout := cfg.CaptchaTimeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	return &captchaVerifier{client: &http.Client{Timeout: timeout}, url: cfg.CaptchaSiteverifyURL}
}

type siteverifyJSON struct {
	Success    bool     `json:"success"`
	ErrorCodes []string `json:"error-codes"`
}

// verify checks token with the provider of cc for a caller at addr. It
// returns the problem to answer, or nil.
func (v *captchaVerifier) verify(ctx context.Context, cc *event.Captcha, token, addr string) (*kit.Problem, error) {
	if token == "" {
		return captchaProblem("captcha_required", "this sale asks for a captcha: pass the challenge on the page and send its token in "+CaptchaHeader), nil
	}
	if len(token) > 4096 || strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return captchaProblem("captcha_failed", "malformed "+CaptchaHeader+" token"), nil
	}
	endpoint := siteverifyURLs[cc.Provider]
	if v.url != "" {
		endpoint = v.url
	}
	form := url.Values{"secret": {cc.Secret}, "response": {token}}
	if addr != "" {
		form.Set("remoteip", addr)
	}
	if cc.Provider == event.CaptchaHCaptcha {
		form.Set("sitekey", cc.SiteKey)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New("siteverify answered " + resp.Status)
	}
	var out siteverifyJSON
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&out); err != nil {
		return nil, errors.New("siteverify answer undecodable")
	}
	if out.Success {
		return nil, nil
	}
	for _, code := range out.ErrorCodes {
		if slices.Contains(usedCodes, code) {
			return captchaProblem("captcha_failed", "the captcha token was already used or has expired: pass the challenge again"), nil
		}
	}
	return captchaProblem("captcha_failed", "the captcha was not passed: try the challenge again"), nil
}

func captchaProblem(code, detail string) *kit.Problem {
	p := kit.NewProblem(fiber.StatusForbidden, code, detail)
	p.Title = "Captcha required"
	return p
}

// checkCaptcha runs the event's captcha on join, when it has one.
func (s *Edge) checkCaptcha(c *fiber.Ctx, cfg *event.Config) error {
	cc := &cfg.Limits.Captcha
	if !cc.On() {
		return nil
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	p, err := s.captcha.verify(ctx, cc, c.Get(CaptchaHeader), s.proxies.ClientIP(c))
	if err != nil {
		s.cfg.Log.Warn("captcha siteverify failed", "request_id", kit.RequestID(c), "event", cfg.ID, "provider", cc.Provider, "err", err)
		return kit.RetryLater("captcha_unavailable", "the captcha could not be checked just now; retry in a moment", 2)
	}
	if p != nil {
		return p
	}
	return nil
}

// WithCaptcha adds to csp, the waiting room's policy for event ev, the
// origins of the event's captcha provider, if it has one.
func (s *Edge) WithCaptcha(ev, csp string) string {
	sale, ok := s.deps.Sales.Get(ev)
	if !ok || !sale.Config.Limits.Captcha.On() {
		return csp
	}
	o := captchaCSP[sale.Config.Limits.Captcha.Provider]
	csp = strings.Replace(csp, "script-src 'self'", "script-src 'self' "+o.script, 1)
	if o.style != "" {
		csp = strings.Replace(csp, "style-src 'unsafe-inline'", "style-src 'unsafe-inline' "+o.style, 1)
	}
	if o.connect != "" {
		csp = strings.Replace(csp, "connect-src 'self'", "connect-src 'self' "+o.connect, 1)
	}
	return csp + "; frame-src " + o.frame
}

//go:embed assets/captcha.js
var captchaJS []byte

// captchaScript serves the page's captcha helper.
func (s *Edge) captchaScript(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/javascript; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "public, max-age=3600")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	return c.Send(captchaJS)
}
