package event

import (
	"fmt"
	"net/url"
)

// Shop is how a sale admits by checkout capacity (see MaxActive): the
// shop's calls into anteroom — a finished checkout session, a health
// signal — are signed with Secret, and Health, when set, holds admission
// while the shop is failing.
type Shop struct {
	// Secret keys the signature of the shop's calls (HMAC-SHA256, as
	// webhooks are signed). Write-only, like a webhook secret: the admin
	// API never returns it, and a change without one keeps the stored one.
	Secret string `json:"secret,omitempty"`
	// SecretSet tells staff reading the configuration that a secret is
	// stored; it is ignored on input.
	SecretSet bool `json:"secret_set,omitempty"`
	// Health, when set, pauses admission while the shop's health check
	// fails and resumes it when it recovers.
	Health *HealthCheck `json:"health,omitempty"`
}

// HealthCheck is a shop's health signal: a URL the nodes poll, the error
// rate the shop pushes (POST /events/{id}/health), or both. Each probe or
// push is one observation; FailAfter failing observations in a row hold
// admission, RecoverAfter healthy ones in a row release it.
type HealthCheck struct {
	// URL is polled with GET; any 2xx within the timeout is healthy. Empty:
	// only pushed signals count. https, unless the node allows http by
	// name (ANTEROOM_WEBHOOK_ALLOW_HTTP), as for webhooks; redirects are
	// never followed.
	URL string `json:"url,omitempty"`
	// IntervalSeconds is how often the URL is probed (once per interval
	// across all nodes).
	//
	// Default: 5
	IntervalSeconds int64 `json:"interval_seconds"`
	// TimeoutSeconds bounds one probe.
	//
	// Default: 2
	TimeoutSeconds int64 `json:"timeout_seconds"`
	// FailAfter is how many failing observations in a row hold admission.
	//
	// Default: 3
	FailAfter int64 `json:"fail_after"`
	// RecoverAfter is how many healthy observations in a row release it.
	//
	// Default: 2
	RecoverAfter int64 `json:"recover_after"`
	// MaxErrorRate is the highest pushed error rate (0..1) still healthy.
	//
	// Default: 0.5
	MaxErrorRate float64 `json:"max_error_rate"`
}

// defaults fills zero fields of h.
func (h *HealthCheck) defaults() {
	if h.IntervalSeconds == 0 {
		h.IntervalSeconds = 5
	}
	if h.TimeoutSeconds == 0 {
		h.TimeoutSeconds = 2
	}
	if h.FailAfter == 0 {
		h.FailAfter = 3
	}
	if h.RecoverAfter == 0 {
		h.RecoverAfter = 2
	}
	if h.MaxErrorRate == 0 {
		h.MaxErrorRate = 0.5
	}
}

// validateShop checks the shop settings' shape; whether an http health URL
// is allowed is the node's decision (CheckWebhookSchemes).
func (c *Config) validateShop() error {
	s := &c.Shop
	if s.Secret != "" && (len(s.Secret) < 16 || len(s.Secret) > 256) {
		return fmt.Errorf("%w: shop.secret must be 16 to 256 characters", ErrInvalid)
	}
	h := s.Health
	if h == nil {
		return nil
	}
	if h.URL != "" {
		u, err := url.Parse(h.URL)
		if err != nil || len(h.URL) > 2048 || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return fmt.Errorf("%w: shop.health.url must be an absolute https URL without credentials", ErrInvalid)
		}
	} else if s.Secret == "" {
		return fmt.Errorf("%w: shop.health needs a url, or a shop.secret for the shop to push its error rate", ErrInvalid)
	}
	switch {
	case h.IntervalSeconds < 1 || h.IntervalSeconds > 3600:
		return fmt.Errorf("%w: shop.health.interval_seconds must be between 1 and 3600", ErrInvalid)
	case h.TimeoutSeconds < 1 || h.TimeoutSeconds > 30 || h.TimeoutSeconds > h.IntervalSeconds:
		return fmt.Errorf("%w: shop.health.timeout_seconds must be between 1 and 30 and at most interval_seconds", ErrInvalid)
	case h.FailAfter < 1 || h.FailAfter > 100:
		return fmt.Errorf("%w: shop.health.fail_after must be between 1 and 100", ErrInvalid)
	case h.RecoverAfter < 1 || h.RecoverAfter > 100:
		return fmt.Errorf("%w: shop.health.recover_after must be between 1 and 100", ErrInvalid)
	case !(h.MaxErrorRate > 0) || h.MaxErrorRate > 1:
		return fmt.Errorf("%w: shop.health.max_error_rate must be above 0 and at most 1", ErrInvalid)
	}
	return nil
}

// HealthChecked reports whether c's admission follows the shop's health.
func (c *Config) HealthChecked() bool { return c.Shop.Health != nil }

// KeepShopSecret gives next the stored shop secret of old when next sends
// none, and clears SecretSet.
func KeepShopSecret(old, next *Config) {
	next.Shop.SecretSet = false
	if next.Shop.Secret == "" {
		next.Shop.Secret = old.Shop.Secret
	}
}

// RedactShop returns a copy of s without its secret, for staff to read.
func RedactShop(s Shop) Shop {
	s.SecretSet, s.Secret = s.Secret != "", ""
	if s.Health != nil {
		h := *s.Health
		s.Health = &h
	}
	return s
}
