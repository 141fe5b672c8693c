package main

import (
	"flag"
	"io"
	"testing"
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
			if cfg.Identity != tc.want {
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
