package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestToolHelpHidesSecrets: invite's, loadgen's, lists', apply's and get's -h show no value taken
// from the environment (the ticket secret, the admin token, URLs with
// credentials), as serve's and worker's do not, while the value still
// applies when the flag is not given.
func TestToolHelpHidesSecrets(t *testing.T) {
	secret := strings.Repeat("cd", 32)
	env := map[string]string{
		"ANTEROOM_TICKET_SECRET": secret,
		"ANTEROOM_ADMIN_TOKEN":   "admintoken-9f8e7d6c5b4a39281706f5e4",
		"ANTEROOM_REDIS_URL":     "redis://:redispassword@127.0.0.1:1/0",
		"ANTEROOM_NATS_URL":      "nats://natsuser:natspassword@127.0.0.1:1",
		"ANTEROOM_API_KEY":       "ak_apikeysecret0123456789",
		"ANTEROOM_URL":           "https://urluser:urlpassword@node.example",
	}
	getenv := func(k string) string { return env[k] }
	var help bytes.Buffer
	_ = invite([]string{"-h"}, getenv, time.Now, &bytes.Buffer{}, &help)
	_ = loadgen(context.Background(), []string{"-h"}, getenv, &bytes.Buffer{}, &help)
	_ = lists(context.Background(), []string{"-h"}, getenv, &bytes.Buffer{}, &help)
	_ = apply(context.Background(), []string{"-h"}, getenv, &bytes.Buffer{}, &help)
	_ = get(context.Background(), []string{"-h"}, getenv, &bytes.Buffer{}, &help)
	for _, s := range []string{secret, "admintoken", "redispassword", "natspassword", "apikeysecret", "urlpassword"} {
		if strings.Contains(help.String(), s) {
			t.Errorf("-h shows %q from the environment:\n%s", s, help.String())
		}
	}
	// The environment still applies: invite signs with it.
	var out bytes.Buffer
	if err := invite([]string{"-event", "e1", "-user", "u1"}, getenv, time.Now, &out, &bytes.Buffer{}); err != nil || out.Len() == 0 {
		t.Fatalf("invite with the secret from the environment: %v %q", err, out.String())
	}
}
