package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/settings"
)

// setValues is a valid value for every registered setting, none of them
// its default.
var setValues = map[string]string{
	"addr": "127.0.0.1:9999", "redis-url": "redis://:hunter2@redis:6379/1", "redis-cluster-addrs": "a:7000, b:7001",
	"nats-url": "nats://n4t5t0k3n@nats:4222", "stream-replicas": "3", "data-dir": "/tmp/anteroom-x",
	"admin-token": "f3a9c1e7b5d2084a6c9e1f3b5d7a", "signing-keys": "/tmp/anteroom-keys",
	"ticket-secret": "8c1f5e0a9b3d7c2e4f6a1b8d0c3e5f7a9b2d4c6e8f0a1c3e5b7d9f2a4c6e8b0d",
	"identity":      "jwt", "identity-header": "X-Who", "user-jwks": "/tmp/jwks.json", "user-token-header": "X-Tok",
	"user-issuer": "shop", "user-audience": "anteroom-users", "user-accept-any-issuer-audience": "true",
	"user-max-token-age": "1h", "metrics-addr": ":9100", "metrics-public": "true", "pprof-addr": "127.0.0.1:6060",
	"issuer": "https://queue.shop.example", "audience": "gateway", "key-reload": "30s",
	"trusted-proxies": "10.0.0.0/8", "max-in-flight": "7", "list-upload-max-bytes": "1048576", "list-max-entries": "5000", "global-join-rate": "5", "global-claim-rate": "6",
	"log-format": "text", "access-log": "all", "slow-request": "2s", "retention": "720h", "slow-redis": "10ms", "trace-status-ratio": "0.25",
	"webhook-allow-http": "true", "allow-private-targets": "10.1.0.0/16,fd00:1::/64", "push-vapid-key": "/tmp/vapid.key",
	"play-integrity-decryption-key":   "cGw0eWQzY3J5cHQxMG5rM3ktMDEyMzQ1Njc4OWFiY2Q=",
	"play-integrity-verification-key": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEgM0py0KJTgCGOoO03kQCgUrcbfQhfTB9fb/wIDk7E7Vy+iVOGBpxciQId1M2ONSLOdTmFaKoydwkTqfjoRjpSg==", "push-subject": "mailto:ops@shop.example", "push-hosts": "push.example", "push-allow-http": "true", "crawler-resolver": "10.0.0.2:53", "crawler-domains": "crawler.example,bot.example.net", "clock-skew": "+3s", "dev-captcha-siteverify-url": "http://127.0.0.1:1/siteverify?secret=s1t3",
	"drain-delay": "1s", "drain-timeout": "3s",
}

// secretsIn are the parts of setValues the start-up log must not show.
var secretsIn = []string{"hunter2", "n4t5t0k3n", "f3a9c1e7b5d2084a6c9e1f3b5d7a", "8c1f5e0a9b3d7c2e4f6a1b8d0c3e5f7a", "s1t3", "cGw0eWQzY3J5cHQxMG5rM3k"}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// allSetByEnv is the environment that sets every setting to setValues.
func allSetByEnv(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, s := range registry(&options{}) {
		v, ok := setValues[s.Name]
		if !ok {
			t.Fatalf("setting %q has no value in setValues: add one that is not its default", s.Name)
		}
		env[s.Env] = v
	}
	return env
}

func buildServe(t *testing.T, env map[string]string, args []string, logTo io.Writer) (options, *boundSettings) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	b := bindSettings(fs, envOf(env), true)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	o, err := b.build(logTo)
	if err != nil {
		t.Fatal(err)
	}
	return o, b
}

// TestRegistryWellFormed: names and variables unique, docs one line, and
// each variable is ANTEROOM_ and its flag's name in capitals.
func TestRegistryWellFormed(t *testing.T) {
	list := registry(&options{})
	if err := settings.Check(list); err != nil {
		t.Error(err)
	}
	for _, s := range list {
		if want := "ANTEROOM_" + strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_")); s.Env != want {
			t.Errorf("-%s reads %s, want %s", s.Name, s.Env, want)
		}
	}
	if len(setValues) != len(list) {
		t.Errorf("setValues has %d values for %d settings", len(setValues), len(list))
	}
}

// TestEverySettableFieldHasASetting: every field of node.Config that a
// deployment sets is reached by a registered setting. Setting them all
// through the environment changes every field but those listed here.
func TestEverySettableFieldHasASetting(t *testing.T) {
	notSettings := map[string]string{
		"Tick":            "tests and embedders only: the frontier tick",
		"Manual":          "tests only: no background loops",
		"Tap":             "tests only: the contract check of every exchange",
		"DoorLists":       "tests and embedders only: the door's view of the lists",
		"DoorRules":       "tests and embedders only: the door's compiled rules",
		"CaptchaTimeout":  "tests only: one siteverify call's bound",
		"Limiter":         "tests only: how rate limiting degrades",
		"AppAttestRoots":  "tests only: a test App Attest root instead of Apple's pinned one (production trusts only Apple's)",
		"RetentionEvery":  "tests only: how often the retention sweep runs (15 minutes)",
		"Log":             "made from -log-format (checked below)",
		"Tracing":         "the standard OTEL_* variables, read by serve (TestServeTracingEnv)",
		"DemoSignInLinks": "the demo command only: no setting serves sign-in links (TestNoSettingServesSignInLinks)",
	}
	set, _ := buildServe(t, allSetByEnv(t), nil, io.Discard)
	unset, _ := buildServe(t, nil, nil, io.Discard)
	a, b := reflect.ValueOf(set.Config), reflect.ValueOf(unset.Config)
	for i := range a.NumField() {
		name := a.Type().Field(i).Name
		same := reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface())
		if _, exempt := notSettings[name]; !exempt && same {
			t.Errorf("node.Config.%s is not changed by any registered setting: register one in cmd/anteroom/settings.go, or list it in notSettings with the reason", name)
		}
	}
	if set.logFormat != "text" || set.drainDelay != time.Second || set.drainTimeout != 3*time.Second {
		t.Errorf("log format %q, drain delay %v, drain timeout %v: want text, 1s, 3s", set.logFormat, set.drainDelay, set.drainTimeout)
	}
}

// TestNoSettingServesSignInLinks: the demo's one-time console sign-in
// links are served by the node the demo starts only. No setting turns
// them on, whatever value it is given: every setting set through the
// environment, or each given a yes of any spelling.
func TestNoSettingServesSignInLinks(t *testing.T) {
	if set, _ := buildServe(t, allSetByEnv(t), nil, io.Discard); set.DemoSignInLinks {
		t.Error("every setting set through the environment serves sign-in links")
	}
	for _, v := range []string{"true", "1", "on", "yes", "TRUE", "demo", "link"} {
		o := &options{}
		for _, s := range registry(o) {
			if s.Set != nil {
				_ = s.Set(v)
			}
		}
		if o.DemoSignInLinks {
			t.Errorf("every setting given %q serves sign-in links", v)
		}
	}
}

// TestEverySettingFlagOverEnvOverDefault: for each setting, the default
// when nothing is set, the variable over the default, the flag over the
// variable.
func TestEverySettingFlagOverEnvOverDefault(t *testing.T) {
	for _, s := range registry(&options{}) {
		for _, tc := range []struct {
			env      map[string]string
			args     []string
			want     string
			wantFrom settings.Source
		}{
			{want: s.Default, wantFrom: settings.FromDefault},
			{env: map[string]string{s.Env: "from-env"}, want: "from-env", wantFrom: settings.FromEnv},
			{env: map[string]string{s.Env: "from-env"}, args: []string{"-" + s.Name + "=from-flag"}, want: "from-flag", wantFrom: settings.FromFlag},
		} {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			b := bindSettings(fs, envOf(tc.env), true)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if v, from, _ := b.Value(s.Name); v != tc.want || from != tc.wantFrom {
				t.Errorf("-%s with env %v and args %v: %q from %s, want %q from %s", s.Name, tc.env, tc.args, v, from, tc.want, tc.wantFrom)
			}
		}
	}
}

// flagsOf lists the flags a command's -h shows.
func flagsOf(t *testing.T, cmd string) []string {
	t.Helper()
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{cmd, "-h"}, envOf(nil), io.Discard, &stderr); err != flag.ErrHelp {
		t.Fatalf("%s -h: %v, want flag.ErrHelp", cmd, err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  -(\S+)`).FindAllStringSubmatch(stderr.String(), -1) {
		names = append(names, m[1])
	}
	return names
}

// TestCommandFlagsAreRegistered: every flag of serve is a registered
// setting and every setting a flag of serve; worker and reconcile take the
// node settings and only their own arguments besides.
func TestCommandFlagsAreRegistered(t *testing.T) {
	var node, all []string
	for _, s := range nodeSettings(&options{}) {
		node = append(node, s.Name)
	}
	for _, s := range registry(&options{}) {
		all = append(all, s.Name)
	}
	for cmd, want := range map[string][]string{
		"serve":     all,
		"worker":    append(slices.Clone(node), "concurrency"),
		"reconcile": append(slices.Clone(node), "event", "timeout"),
	} {
		got := flagsOf(t, cmd)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s's flags\n%v\nwant the registry's\n%v", cmd, got, want)
		}
	}
}

// TestSettingsLogRedacted: the settings-in-effect line names every setting
// and shows no secret, token or URL password.
func TestSettingsLogRedacted(t *testing.T) {
	var log bytes.Buffer
	o, b := buildServe(t, allSetByEnv(t), []string{"-addr", "127.0.0.1:9998"}, &log)
	b.logInEffect(o.Log)
	got := log.String()
	for _, s := range secretsIn {
		if strings.Contains(got, s) {
			t.Errorf("the start-up log shows %q:\n%s", s, got)
		}
	}
	for _, s := range registry(&options{}) {
		if !strings.Contains(got, " settings."+s.Name+"=") {
			t.Errorf("the start-up log does not name %s:\n%s", s.Name, got)
		}
	}
	for _, want := range []string{"settings.redis-url=redis://[redacted]@redis:6379/1", "settings.admin-token=[redacted]", "from_flag=[addr]"} {
		if !strings.Contains(got, want) {
			t.Errorf("the start-up log lacks %s:\n%s", want, got)
		}
	}
}

// TestServeLogsSettingsInEffect: `anteroom serve` logs the settings line
// before it starts the node.
func TestServeLogsSettingsInEffect(t *testing.T) {
	env := map[string]string{
		"ANTEROOM_ADDR": "127.0.0.1:0", "ANTEROOM_METRICS_ADDR": "127.0.0.1:0", "ANTEROOM_DATA_DIR": t.TempDir(), "ANTEROOM_DRAIN_DELAY": "0s",
		"ANTEROOM_ADMIN_TOKEN": setValues["admin-token"], "ANTEROOM_TICKET_SECRET": setValues["ticket-secret"],
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // start, then shut down at once
	var stderr bytes.Buffer
	_ = run(ctx, []string{"serve"}, envOf(env), io.Discard, &stderr)
	got := stderr.String()
	if !strings.Contains(got, `"msg":"settings in effect"`) || !strings.Contains(got, `"from_env":["addr","data-dir","admin-token","ticket-secret","metrics-addr","drain-delay"]`) {
		t.Errorf("serve's log has no settings line naming what the environment set:\n%s", got)
	}
	for _, s := range secretsIn {
		if strings.Contains(got, s) {
			t.Errorf("serve's log shows %q", s)
		}
	}
}

// TestDocsSettingsTable: docs/configure.md's settings table is the
// registry's, byte for byte.
func TestDocsSettingsTable(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configure.md")
	if err != nil {
		t.Fatal(err)
	}
	got, err := settings.Block(string(raw))
	if err != nil {
		t.Fatalf("docs/configure.md: %v; regenerate with: %s", err, regenerate)
	}
	if want := settingsSection(); got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range max(len(gl), len(wl)) {
			if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
				t.Errorf("docs/configure.md's settings table is not the registry's (cmd/anteroom/settings.go); regenerate it from the repository root with:\n\t%s\nfirst difference, line %d of the section:\ndocs:     %q\nregistry: %q",
					regenerate, i+1, at(gl, i), at(wl, i))
				break
			}
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end)"
}
