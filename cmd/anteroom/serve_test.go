package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestServeRefusesWeakSecrets: `anteroom serve` exits at once with a clear
// message for a zero, patterned or placeholder ticket secret and a short
// or placeholder admin token (the values the repository used to ship).
func TestServeRefusesWeakSecrets(t *testing.T) {
	const goodSecret = "8c1f5e0a9b3d7c2e4f6a1b8d0c3e5f7a9b2d4c6e8f0a1c3e5b7d9f2a4c6e8b0d"
	const goodAdmin = "f3a9c1e7b5d2084a6c9e1f3b5d7a"
	cases := map[string]struct{ secret, admin, want string }{
		"zero secret":         {strings.Repeat("0", 64), goodAdmin, "ANTEROOM_TICKET_SECRET"},
		"repeated secret":     {strings.Repeat("ab", 32), goodAdmin, "ANTEROOM_TICKET_SECRET"},
		"placeholder secret":  {"REPLACE-with-64-hex-digits-from-openssl-rand-hex-32", goodAdmin, "ANTEROOM_TICKET_SECRET"},
		"short admin token":   {goodSecret, "tooshort-0123456789", "ANTEROOM_ADMIN_TOKEN"},
		"compose admin token": {goodSecret, "compose-admin-token-change-me", "ANTEROOM_ADMIN_TOKEN"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{
				"ANTEROOM_ADDR": "127.0.0.1:0", "ANTEROOM_METRICS_ADDR": "127.0.0.1:0", "ANTEROOM_DATA_DIR": t.TempDir(), "ANTEROOM_DRAIN_DELAY": "0s",
				"ANTEROOM_TICKET_SECRET": tc.secret, "ANTEROOM_ADMIN_TOKEN": tc.admin,
			}
			// Bounded: on a node that wrongly starts, serve returns once
			// the context ends.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errOut bytes.Buffer
			err := run(ctx, []string{"serve"}, func(k string) string { return env[k] }, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("serve: %v, want an error naming %s", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.admin) && tc.want == "ANTEROOM_ADMIN_TOKEN" {
				t.Errorf("the error %q shows the admin token", err)
			}
		})
	}
}

// TestServeRefusesLargeClockSkew: the drill setting ANTEROOM_CLOCK_SKEW is
// refused beyond ±5m, and anything but a duration, before the node starts.
func TestServeRefusesLargeClockSkew(t *testing.T) {
	for _, skew := range []string{"10m", "-5m1s", "ahead"} {
		env := map[string]string{
			"ANTEROOM_ADDR": "127.0.0.1:0", "ANTEROOM_METRICS_ADDR": "127.0.0.1:0", "ANTEROOM_DATA_DIR": t.TempDir(), "ANTEROOM_DRAIN_DELAY": "0s",
			"ANTEROOM_CLOCK_SKEW": skew,
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := run(ctx, []string{"serve"}, func(k string) string { return env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "ANTEROOM_CLOCK_SKEW") {
			t.Errorf("serve with ANTEROOM_CLOCK_SKEW=%s: %v, want an error naming it", skew, err)
		}
	}
}

// TestServeRefusesRemoteSiteverify: the development setting
// ANTEROOM_DEV_CAPTCHA_SITEVERIFY_URL may only name a stub on this machine
// (a loopback address, or localhost resolving to loopback only): a remote
// stub that says yes would pass every captcha and receive the sale's
// captcha secret. serve refuses to start, naming the variable.
func TestServeRefusesRemoteSiteverify(t *testing.T) {
	for _, u := range []string{
		"http://203.0.113.7/siteverify",
		"https://10.0.0.5/siteverify",
		"http://stub.example/siteverify",
		"http://127.0.0.1.nip.io/siteverify",
		"http://[::ffff:203.0.113.7]/siteverify",
		"http://0.0.0.0:8081/siteverify",
	} {
		env := map[string]string{
			"ANTEROOM_ADDR": "127.0.0.1:0", "ANTEROOM_DATA_DIR": t.TempDir(), "ANTEROOM_DRAIN_DELAY": "0s",
			"ANTEROOM_DEV_CAPTCHA_SITEVERIFY_URL": u,
		}
		// Bounded: on a node that wrongly starts, serve returns once the
		// context ends.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := run(ctx, []string{"serve"}, func(k string) string { return env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
		cancel()
		if err == nil || !strings.Contains(err.Error(), "ANTEROOM_DEV_CAPTCHA_SITEVERIFY_URL") {
			t.Errorf("serve with ANTEROOM_DEV_CAPTCHA_SITEVERIFY_URL=%s: %v, want an error naming it", u, err)
		}
	}
}

// TestServeTracingEnv: serve reads the standard OTEL_* variables: a value
// it cannot honour stops it before the node starts, naming the variable;
// an OTLP endpoint turns tracing on (the start-up log says where to);
// without one the log says nothing of tracing.
func TestServeTracingEnv(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{"ANTEROOM_ADDR": "127.0.0.1:0", "ANTEROOM_METRICS_ADDR": "127.0.0.1:0", "ANTEROOM_DATA_DIR": t.TempDir(), "ANTEROOM_DRAIN_DELAY": "0s"}
	}
	for k, v := range map[string]string{"OTEL_TRACES_EXPORTER": "jaeger", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_TRACES_SAMPLER": "sometimes"} {
		env := base()
		env["OTEL_TRACES_EXPORTER"], env[k] = "otlp", v
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := run(ctx, []string{"serve"}, func(k string) string { return env[k] }, &bytes.Buffer{}, &bytes.Buffer{})
		cancel()
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("serve with %s=%s: %v, want an error naming the value", k, v, err)
		}
	}
	for _, on := range []bool{false, true} {
		env := base()
		if on {
			env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:1" // nothing listens: spans are dropped
		}
		ctx, cancel := context.WithCancel(context.Background())
		var log lockedBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"serve"}, func(k string) string { return env[k] }, &bytes.Buffer{}, &log)
		}()
		testenv.WaitFor(t, "the node to start", 30*time.Second, func() bool { return strings.Contains(log.String(), "anteroom node serving") })
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve: %v", err)
		}
		if got := strings.Contains(log.String(), "tracing on: OTLP traces") && strings.Contains(log.String(), "http://127.0.0.1:1/v1/traces"); got != on {
			t.Errorf("OTLP endpoint set %v: the log says tracing is on at it: %v; log:\n%s", on, got, log.String())
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
