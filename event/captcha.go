package event

import (
	"fmt"
	"regexp"
)

// Captcha providers a sale may ask joiners to pass, beside or instead of
// the proof of work: a hosted challenge whose widget the waiting room
// shows, and whose token the node verifies with the provider's siteverify
// API on join.
const (
	CaptchaTurnstile = "turnstile" // Cloudflare Turnstile
	CaptchaHCaptcha  = "hcaptcha"
)

// Captcha configures the captcha of join. The zero value is off.
type Captcha struct {
	// Provider is turnstile or hcaptcha; empty turns the captcha off (and
	// clears the keys).
	//
	// Default: "" (off)
	Provider string `json:"provider,omitempty"`
	// SiteKey is the provider's public site key, given to the page.
	SiteKey string `json:"site_key,omitempty"`
	// Secret is the provider's secret key, sent to siteverify only.
	// Write-only: the admin API never returns it; an update that leaves it
	// out keeps the stored one (send it again when changing provider).
	Secret string `json:"secret,omitempty"`
	// SecretSet tells staff reading the configuration that a secret is
	// stored; it is ignored on input.
	SecretSet bool `json:"secret_set,omitempty"`
}

// On reports whether join asks for a captcha.
func (c *Captcha) On() bool { return c.Provider != "" }

// Redacted returns c without its secret, for staff to read.
func (c Captcha) Redacted() Captcha {
	c.SecretSet, c.Secret = c.Secret != "", ""
	return c
}

var (
	siteKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)
	secretPattern  = regexp.MustCompile(`^[\x21-\x7e]{16,256}$`)
)

// defaults clears the keys of a captcha that is off, and the output-only
// SecretSet.
func (c *Captcha) defaults() {
	c.SecretSet = false
	if c.Provider == "" {
		*c = Captcha{}
	}
}

// validate checks c; the error names the field.
func (c *Captcha) validate() error {
	switch c.Provider {
	case "":
		return nil
	case CaptchaTurnstile, CaptchaHCaptcha:
	default:
		return fmt.Errorf("%w: limits.captcha.provider must be %q or %q (or empty: off)", ErrInvalid, CaptchaTurnstile, CaptchaHCaptcha)
	}
	if !siteKeyPattern.MatchString(c.SiteKey) {
		return fmt.Errorf("%w: limits.captcha.site_key must be the provider's site key: 1 to 256 characters of A-Z a-z 0-9 _ . -", ErrInvalid)
	}
	if !secretPattern.MatchString(c.Secret) {
		return fmt.Errorf("%w: limits.captcha.secret must be the provider's secret key: 16 to 256 printable characters", ErrInvalid)
	}
	return nil
}
