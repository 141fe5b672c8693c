package settings

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestPrecedence: flag over environment over default; an empty variable
// counts as unset.
func TestPrecedence(t *testing.T) {
	s := Setting{Name: "addr", Env: "X_ADDR", Default: ":8080", Doc: "listen address"}
	for name, tc := range map[string]struct {
		env      map[string]string
		args     []string
		want     string
		wantFrom Source
	}{
		"nothing set":    {want: ":8080", wantFrom: FromDefault},
		"empty variable": {env: map[string]string{"X_ADDR": ""}, want: ":8080", wantFrom: FromDefault},
		"environment":    {env: map[string]string{"X_ADDR": ":9000"}, want: ":9000", wantFrom: FromEnv},
		"flag":           {args: []string{"-addr", ":9001"}, want: ":9001", wantFrom: FromFlag},
		"flag over env":  {env: map[string]string{"X_ADDR": ":9000"}, args: []string{"-addr", ":9001"}, want: ":9001", wantFrom: FromFlag},
		"empty flag":     {env: map[string]string{"X_ADDR": ":9000"}, args: []string{"-addr="}, want: "", wantFrom: FromFlag},
	} {
		t.Run(name, func(t *testing.T) {
			var got string
			s := s
			s.Set = func(v string) error { got = v; return nil }
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			b := Bind(fs, env(tc.env), []Setting{s})
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := b.Apply(); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("applied %q, want %q", got, tc.want)
			}
			if v, from, ok := b.Value("addr"); !ok || v != tc.want || from != tc.wantFrom {
				t.Errorf("Value: %q from %q (%v), want %q from %q", v, from, ok, tc.want, tc.wantFrom)
			}
			if got, want := Lookup(env(tc.env), s), fs.Lookup("addr").DefValue; got != want {
				t.Errorf("Lookup %q, flag default %q", got, want)
			}
		})
	}
}

// TestApplyJoinsErrors: every invalid value is reported, in list order.
func TestApplyJoinsErrors(t *testing.T) {
	bad := func(v string) error { return errors.New("bad " + v) }
	list := []Setting{
		{Name: "a", Env: "A", Default: "1", Doc: "a", Set: bad},
		{Name: "b", Env: "B", Default: "2", Doc: "b"},
		{Name: "c", Env: "C", Default: "3", Doc: "c", Set: bad},
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	b := Bind(fs, env(nil), list)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(); err == nil || err.Error() != "bad 1\nbad 3" {
		t.Errorf("Apply: %v, want bad 1 and bad 3", err)
	}
	if got := strings.Join(b.Names(FromDefault), ","); got != "a,b,c" {
		t.Errorf("from default %q, want a,b,c", got)
	}
}

// TestUsage: the flag's usage is the doc and the variable.
func TestUsage(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	Bind(fs, env(nil), []Setting{{Name: "addr", Env: "X_ADDR", Default: ":8080", Doc: "listen address"}})
	if got, want := fs.Lookup("addr").Usage, "listen address (X_ADDR)"; got != want {
		t.Errorf("usage %q, want %q", got, want)
	}
}

// TestCheck: names and variables are unique, docs are one line.
func TestCheck(t *testing.T) {
	ok := Setting{Name: "a", Env: "A", Doc: "a"}
	for name, tc := range map[string]struct {
		list []Setting
		bad  bool
	}{
		"fine":           {list: []Setting{ok, {Name: "b", Env: "B", Doc: "b"}}},
		"no doc":         {list: []Setting{{Name: "a", Env: "A"}}, bad: true},
		"name twice":     {list: []Setting{ok, {Name: "a", Env: "B", Doc: "b"}}, bad: true},
		"variable twice": {list: []Setting{ok, {Name: "b", Env: "A", Doc: "b"}}, bad: true},
		"two lines":      {list: []Setting{{Name: "a", Env: "A", Doc: "a\nb"}}, bad: true},
		"backquote":      {list: []Setting{{Name: "a", Env: "A", Doc: "a `b`"}}, bad: true},
		"pipe":           {list: []Setting{{Name: "a", Env: "A", Doc: "a | b"}}, bad: true},
	} {
		if err := Check(tc.list); (err != nil) != tc.bad {
			t.Errorf("%s: Check %v, want an error %v", name, err, tc.bad)
		}
	}
}

// TestSecretNotShownAsDefault: -h does not show a secret or a URL password
// from the environment as the flag's default, and the environment's value
// still applies, below the flag.
func TestSecretNotShownAsDefault(t *testing.T) {
	list := []Setting{
		{Name: "token", Env: "X_TOKEN", Doc: "token", Secret: true},
		{Name: "url", Env: "X_URL", Default: "redis://r:6379", Doc: "url"},
	}
	e := env(map[string]string{"X_TOKEN": "f3a9c1e7b5d2084a6c9e1f3b5d7a", "X_URL": "redis://:hunter2@r:6379"})
	for _, tc := range []struct {
		args       []string
		token, url string
	}{
		{token: "f3a9c1e7b5d2084a6c9e1f3b5d7a", url: "redis://:hunter2@r:6379"},
		{args: []string{"-token", "other-token", "-url", "redis://s:6379"}, token: "other-token", url: "redis://s:6379"},
	} {
		var help strings.Builder
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(&help)
		b := Bind(fs, e, list)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		fs.PrintDefaults()
		if strings.Contains(help.String(), "f3a9c1e7") || strings.Contains(help.String(), "hunter2") {
			t.Errorf("-h shows a secret:\n%s", help.String())
		}
		if v, _, _ := b.Value("token"); v != tc.token {
			t.Errorf("token %q, want %q", v, tc.token)
		}
		if v, _, _ := b.Value("url"); v != tc.url {
			t.Errorf("url %q, want %q", v, tc.url)
		}
	}
}
