package event

import (
	"fmt"
	"net/url"
	"slices"
)

// Lifecycle event types a webhook may ask for (see package lifecycle).
var LifecycleTypes = []string{"sale_opened", "window_closed", "paused", "resumed", "closed", "reopened", "sold_out", "sale_ended", "your_turn", "queueing_started", "queueing_stopped", "order_cancelled"}

// MaxWebhooks bounds the webhooks of one event.
const MaxWebhooks = 8

// Webhook is one HTTP endpoint that receives an event's lifecycle events,
// signed with Secret (HMAC-SHA256). Webhook URLs are set by staff only;
// they are the staff's trust, like any outbound integration.
type Webhook struct {
	// URL receives a POST per lifecycle event: https, unless the node
	// allows http by name (ANTEROOM_WEBHOOK_ALLOW_HTTP).
	URL string `json:"url"`
	// Secret keys the signature. Write-only: the admin API never returns
	// it; a change that sends a webhook without one keeps the stored
	// secret of the webhook with the same URL.
	Secret string `json:"secret,omitempty"`
	// Events are the lifecycle types delivered; empty means all but
	// your_turn (one per admitted person, asked for by name).
	Events []string `json:"events,omitempty"`
	// SecretSet tells staff reading the configuration that a secret is
	// stored; it is ignored on input.
	SecretSet bool `json:"secret_set,omitempty"`
}

// Wants reports whether w receives lifecycle events of type typ.
func (w *Webhook) Wants(typ string) bool {
	if len(w.Events) == 0 {
		return typ != "your_turn"
	}
	return slices.Contains(w.Events, typ)
}

// WantsYourTurn reports whether any webhook of c asks for your_turn events
// (which make the node keep who holds each sequence number).
func (c *Config) WantsYourTurn() bool {
	for i := range c.Webhooks {
		if slices.Contains(c.Webhooks[i].Events, "your_turn") {
			return true
		}
	}
	return false
}

// validateWebhooks checks the webhooks' shape; whether http is allowed is
// the node's decision (CheckWebhookSchemes).
func (c *Config) validateWebhooks() error {
	if len(c.Webhooks) > MaxWebhooks {
		return fmt.Errorf("%w: at most %d webhooks", ErrInvalid, MaxWebhooks)
	}
	for i := range c.Webhooks {
		w := &c.Webhooks[i]
		u, err := url.Parse(w.URL)
		if err != nil || len(w.URL) > 2048 || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return fmt.Errorf("%w: webhooks[%d].url must be an absolute https URL without credentials", ErrInvalid, i)
		}
		if len(w.Secret) < 16 || len(w.Secret) > 256 {
			return fmt.Errorf("%w: webhooks[%d].secret must be 16 to 256 characters", ErrInvalid, i)
		}
		for _, typ := range w.Events {
			if !slices.Contains(LifecycleTypes, typ) {
				return fmt.Errorf("%w: webhooks[%d].events: unknown type %q (known: %v)", ErrInvalid, i, typ, LifecycleTypes)
			}
		}
	}
	return nil
}

// CheckWebhookSchemes refuses http webhook and shop health URLs unless
// allowHTTP.
func CheckWebhookSchemes(c *Config, allowHTTP bool) error {
	if h := c.Shop.Health; h != nil && !allowHTTP {
		if u, err := url.Parse(h.URL); err == nil && u.Scheme == "http" {
			return fmt.Errorf("%w: shop.health.url is http; it must be https unless the node sets ANTEROOM_WEBHOOK_ALLOW_HTTP", ErrInvalid)
		}
	}
	for i := range c.Webhooks {
		if u, err := url.Parse(c.Webhooks[i].URL); err == nil && u.Scheme == "http" && !allowHTTP {
			return fmt.Errorf("%w: webhooks[%d].url is http; webhooks are https unless the node sets ANTEROOM_WEBHOOK_ALLOW_HTTP", ErrInvalid, i)
		}
	}
	return nil
}

// KeepWebhookSecrets gives each webhook of next sent without a secret the
// stored secret of old's webhook with the same URL, and clears SecretSet.
func KeepWebhookSecrets(old, next *Config) {
	for i := range next.Webhooks {
		w := &next.Webhooks[i]
		w.SecretSet = false
		if w.Secret != "" {
			continue
		}
		for j := range old.Webhooks {
			if old.Webhooks[j].URL == w.URL {
				w.Secret = old.Webhooks[j].Secret
				break
			}
		}
	}
}

// RedactWebhooks returns a copy of ws without secrets, for staff to read.
func RedactWebhooks(ws []Webhook) []Webhook {
	if ws == nil {
		return nil
	}
	out := make([]Webhook, len(ws))
	for i, w := range ws {
		w.Events = slices.Clone(w.Events)
		w.SecretSet, w.Secret = w.Secret != "", ""
		out[i] = w
	}
	return out
}
