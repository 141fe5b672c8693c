package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/settings"
)

// boundSettings are the registry's settings registered on one command's
// flag set, and the options they fill.
type boundSettings struct {
	*settings.Bound
	opts *options
}

// bindSettings registers the node settings on fs (and serve's own when
// serve is set), each flag defaulting to its ANTEROOM_* environment
// variable. Read it with build after fs.Parse.
func bindSettings(fs *flag.FlagSet, getenv func(string) string, serve bool) *boundSettings {
	o := &options{}
	list := nodeSettings(o)
	if serve {
		list = append(list, serveSettings(o)...)
	}
	return &boundSettings{Bound: settings.Bind(fs, getenv, list), opts: o}
}

// build applies the values in effect and makes the node's logger, writing
// to logTo. Every invalid value is reported at once.
func (b *boundSettings) build(logTo io.Writer) (options, error) {
	if err := b.Apply(); err != nil {
		return *b.opts, err
	}
	b.opts.Log = newLogger(logTo, b.opts.logFormat, slog.LevelInfo)
	return *b.opts, nil
}

// logInEffect logs the settings in effect, secrets redacted, and which
// of them the environment and the command line gave.
func (b *boundSettings) logInEffect(log *slog.Logger) {
	log.Info("settings in effect", "settings", b.Bound,
		"from_env", b.Names(settings.FromEnv), "from_flag", b.Names(settings.FromFlag))
}

// nodeFlags registers the node's configuration on fs, each flag defaulting
// to its ANTEROOM_* environment variable, and returns a function that builds
// the node.Config after fs.Parse.
func nodeFlags(fs *flag.FlagSet, getenv func(string) string, logTo io.Writer) func() (node.Config, error) {
	b := bindSettings(fs, getenv, false)
	return func() (node.Config, error) {
		o, err := b.build(logTo)
		return o.Config, err
	}
}

// envSetting is the value of the registered setting name before flags:
// its environment variable, else its default. The tools that take a node
// setting under a flag of their own (keys, invite, loadgen) read it here.
func envSetting(getenv func(string) string, name string) string {
	s, _ := settings.Find(registry(&options{}), name)
	return settings.Lookup(getenv, s)
}

// envFlag registers a string flag of a tool (invite, loadgen) whose
// default is the node setting name from the environment, without showing
// that value in -h: it may be a secret or a URL with credentials. Call the
// returned function after fs.Parse for the value in effect.
func envFlag(fs *flag.FlagSet, getenv func(string) string, name, usage string) func() string {
	v := fs.String(name, "", usage)
	return func() string {
		if *v != "" {
			return *v
		}
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
		if set {
			return ""
		}
		return envSetting(getenv, name)
	}
}

func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// str stores a value as it is.
func str(to *string) func(string) error {
	return func(v string) error { *to = v; return nil }
}

// list stores the non-empty items of a comma-separated value; none: nil.
func list(to *[]string) func(string) error {
	return func(v string) error {
		*to = nil
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				*to = append(*to, item)
			}
		}
		return nil
	}
}

// boolean stores true or false (strconv.ParseBool).
func boolean(to *bool, what string) func(string) error {
	return func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s %q: want true or false", what, v)
		}
		*to = b
		return nil
	}
}

// duration stores a duration that ok accepts; want says what is wanted.
func duration(to *time.Duration, what, want string, ok func(time.Duration) bool) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || !ok(d) {
			return fmt.Errorf("%s %q: want %s", what, v, want)
		}
		*to = d
		return nil
	}
}

// rate stores a rate per second of 0 (unlimited) or more.
func rate(to *float64, what string) func(string) error {
	return func(v string) error {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || !(r >= 0) {
			return fmt.Errorf("%s %q: want a number of requests per second, 0 for unlimited", what, v)
		}
		*to = r
		return nil
	}
}
