package event

import (
	"errors"
	"strings"
	"testing"
)

func TestWebhookValidation(t *testing.T) {
	good := Webhook{URL: "https://shop.example/hooks", Secret: "0123456789abcdef", Events: []string{"your_turn"}}
	tests := []struct {
		name string
		edit func(w *Webhook)
		want string // "" valid
	}{
		{"valid", func(*Webhook) {}, ""},
		{"relative", func(w *Webhook) { w.URL = "/hooks" }, "url"},
		{"ftp", func(w *Webhook) { w.URL = "ftp://shop.example/" }, "url"},
		{"credentials", func(w *Webhook) { w.URL = "https://u:p@shop.example/" }, "url"},
		{"short secret", func(w *Webhook) { w.Secret = "short" }, "secret"},
		{"unknown type", func(w *Webhook) { w.Events = []string{"refunded"} }, "unknown type"},
	}
	for _, tc := range tests {
		w := good
		w.Events = append([]string(nil), good.Events...)
		tc.edit(&w)
		c := Config{Webhooks: []Webhook{w}}
		err := c.validateWebhooks()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	sharded := Config{JoinShards: 4, Webhooks: []Webhook{good}}
	if err := sharded.validateWebhooks(); err != nil {
		t.Errorf("your_turn on a sharded queue: %v (lifecycle maps its positions back to places)", err)
	}
	http := Config{Webhooks: []Webhook{{URL: "http://127.0.0.1:8000/hooks", Secret: good.Secret}}}
	if CheckWebhookSchemes(&http, false) == nil || CheckWebhookSchemes(&http, true) != nil {
		t.Error("http webhooks: want refused unless allowed")
	}
}

func TestWebhookSecretsWriteOnly(t *testing.T) {
	old := Config{Webhooks: []Webhook{{URL: "https://a.example/", Secret: "secret-a-0123456789"}}}
	next := Config{Webhooks: []Webhook{{URL: "https://a.example/", SecretSet: true}, {URL: "https://b.example/"}}}
	KeepWebhookSecrets(&old, &next)
	if next.Webhooks[0].Secret != "secret-a-0123456789" || next.Webhooks[0].SecretSet || next.Webhooks[1].Secret != "" {
		t.Errorf("kept secrets %+v", next.Webhooks)
	}
	shown := RedactWebhooks(old.Webhooks)
	if shown[0].Secret != "" || !shown[0].SecretSet || old.Webhooks[0].Secret == "" {
		t.Errorf("redacted %+v (original %+v)", shown, old.Webhooks)
	}
	if (&Webhook{}).Wants("your_turn") || !(&Webhook{}).Wants("paused") {
		t.Error("a webhook without events: want every type but your_turn")
	}
}
