package settings

import (
	"bytes"
	"flag"
	"log/slog"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	plain := Setting{Name: "url"}
	secret := Setting{Name: "token", Secret: true}
	for _, tc := range []struct {
		s        Setting
		in, want string
	}{
		{secret, "", ""},
		{secret, "f3a9c1e7b5d2084a6c9e1f3b5d7a", Redacted},
		{plain, ":8080", ":8080"},
		{plain, "anteroom-data", "anteroom-data"},
		{plain, "10.0.0.0/8, 192.168.1.1", "10.0.0.0/8, 192.168.1.1"},
		{plain, "redis://redis:6379/0", "redis://redis:6379/0"},
		{plain, "redis://:hunter2@redis:6379/0", "redis://" + Redacted + "@redis:6379/0"},
		{plain, "rediss://default:hunter2@redis:6379", "rediss://" + Redacted + "@redis:6379"},
		{plain, "redis://:pa,ss@redis:6379", "redis://" + Redacted + "@redis:6379"},
		{plain, "redis://:p@ss@redis:6379", "redis://" + Redacted + "@" + Redacted + "@redis:6379"},
		{plain, "nats://s3cr3t@a:4222,nats://u:p@b:4222", "nats://" + Redacted + "@a:4222,nats://" + Redacted + "@b:4222"},
		{plain, "nats://a:4222,nats://u:p@b:4222", "nats://a:4222,nats://" + Redacted + "@b:4222"},
		{plain, "u:p@redis:6379", Redacted + "@redis:6379"},
		{plain, "http://stub/siteverify?secret=abc&x=1&api_key=k", "http://stub/siteverify?secret=" + Redacted + "&x=1&api_key=" + Redacted},
	} {
		if got := Redact(tc.s, tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestLogValue: the start-up log names every setting and shows no secret.
func TestLogValue(t *testing.T) {
	list := []Setting{
		{Name: "addr", Env: "A", Default: ":8080", Doc: "a"},
		{Name: "redis-url", Env: "R", Doc: "r"},
		{Name: "admin-token", Env: "T", Doc: "t", Secret: true},
		{Name: "ticket-secret", Env: "S", Doc: "s", Secret: true},
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	b := Bind(fs, env(map[string]string{"R": "redis://:hunter2@r:6379", "T": "f3a9c1e7b5d2084a6c9e1f3b5d7a"}), list)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	slog.New(slog.NewJSONHandler(&out, nil)).Info("settings in effect", "settings", b)
	got := out.String()
	for _, leak := range []string{"hunter2", "f3a9c1e7b5d2084a6c9e1f3b5d7a"} {
		if strings.Contains(got, leak) {
			t.Errorf("the log shows %q: %s", leak, got)
		}
	}
	want := `"settings":{"addr":":8080","redis-url":"redis://[redacted]@r:6379","admin-token":"[redacted]","ticket-secret":""}`
	if !strings.Contains(got, want) {
		t.Errorf("log %s, want it to hold %s", got, want)
	}
}
