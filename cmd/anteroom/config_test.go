package main

import (
	"flag"
	"io"
	"strconv"
	"testing"

	"github.com/anteroom/anteroom/internal/node"
)

// TestIdentityDefault: with no configuration the node names callers by a
// signed visitor cookie, never by a header any client can send.
func TestIdentityDefault(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"nothing set":   {want: "anonymous"},
		"environment":   {env: map[string]string{"ANTEROOM_IDENTITY": "jwt"}, want: "jwt"},
		"flag wins":     {env: map[string]string{"ANTEROOM_IDENTITY": "jwt"}, args: []string{"-identity", "header"}, want: "header"},
		"header by env": {env: map[string]string{"ANTEROOM_IDENTITY": "header", "ANTEROOM_TRUSTED_PROXIES": "10.0.0.0/8"}, want: "header"},
	} {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			build := nodeFlags(fs, func(k string) string { return tc.env[k] }, io.Discard)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := build()
			if err != nil {
				t.Fatal(err)
			}
			if string(cfg.Identity) != tc.want {
				t.Errorf("identity %q, want %q", cfg.Identity, tc.want)
			}
		})
	}
}

// TestPprofAddrSetting: profiling is off unless ANTEROOM_PPROF_ADDR or
// -pprof-addr names an address.
func TestPprofAddrSetting(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"nothing set": {want: ""},
		"environment": {env: map[string]string{"ANTEROOM_PPROF_ADDR": "127.0.0.1:6060"}, want: "127.0.0.1:6060"},
		"flag":        {args: []string{"-pprof-addr", "127.0.0.1:6061"}, want: "127.0.0.1:6061"},
	} {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			build := nodeFlags(fs, func(k string) string { return tc.env[k] }, io.Discard)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := build()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.PprofAddr != tc.want {
				t.Errorf("pprof address %q, want %q", cfg.PprofAddr, tc.want)
			}
		})
	}
}

// TestMetricsSettings: the metrics listener is on loopback unless
// ANTEROOM_METRICS_ADDR or -metrics-addr names another address, and the
// public address serves /metrics only with -metrics-public.
func TestMetricsSettings(t *testing.T) {
	for name, tc := range map[string]struct {
		env    map[string]string
		args   []string
		addr   string
		public bool
	}{
		"nothing set": {addr: "127.0.0.1:9100"},
		"environment": {env: map[string]string{"ANTEROOM_METRICS_ADDR": ":9100", "ANTEROOM_METRICS_PUBLIC": "true"}, addr: ":9100", public: true},
		"flag":        {args: []string{"-metrics-addr", "10.0.0.5:9200", "-metrics-public=false"}, addr: "10.0.0.5:9200"},
	} {
		t.Run(name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			build := nodeFlags(fs, func(k string) string { return tc.env[k] }, io.Discard)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := build()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MetricsAddr != tc.addr || cfg.MetricsPublic != tc.public {
				t.Errorf("metrics %q public %v, want %q %v", cfg.MetricsAddr, cfg.MetricsPublic, tc.addr, tc.public)
			}
		})
	}
}

// TestFlagSettingsParsed: an identity mode or access-log mode that is not
// one of the named values stops the command at flag reading, and every
// flag default is the node's own default.
func TestFlagSettingsParsed(t *testing.T) {
	for _, env := range []map[string]string{{"ANTEROOM_IDENTITY": "Header"}, {"ANTEROOM_ACCESS_LOG": "verbose"}} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		build := nodeFlags(fs, func(k string) string { return env[k] }, io.Discard)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		if _, err := build(); err == nil {
			t.Errorf("%v: built a configuration, want an error", env)
		}
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	nodeFlags(fs, func(string) string { return "" }, io.Discard)
	def := node.DefaultConfig()
	for name, want := range map[string]string{
		"addr": def.Addr, "data-dir": def.DataDir, "identity": string(def.Identity),
		"identity-header": def.IdentityHeader, "user-token-header": def.UserTokenHeader,
		"issuer": def.Issuer, "audience": def.Audience, "key-reload": def.KeyReload.String(),
		"access-log": string(def.AccessLog), "slow-request": def.SlowRequest.String(),
		"slow-redis": def.SlowRedis.String(), "max-in-flight": strconv.Itoa(def.MaxInFlight),
	} {
		if got := fs.Lookup(name).DefValue; got != want {
			t.Errorf("-%s defaults to %q, the node to %q", name, got, want)
		}
	}
}
