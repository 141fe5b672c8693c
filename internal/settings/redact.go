package settings

import (
	"log/slog"
	"strings"
)

// Redacted stands in for a secret in the start-up log.
const Redacted = "[redacted]"

// LogValue is the settings in effect for the start-up log, one attribute
// per setting, each value passed through Redact.
func (b *Bound) LogValue() slog.Value {
	attrs := make([]slog.Attr, len(b.list))
	for i, s := range b.list {
		attrs[i] = slog.String(s.Name, Redact(s, b.value(i)))
	}
	return slog.GroupValue(attrs...)
}

// Redact returns v as it may be logged for s: empty stays empty (the log
// shows the setting is not set), a Secret setting's value is Redacted, and
// any other value loses the credentials it carries: the user information
// of every URL in it (redis://:password@host, nats://token@host, several
// comma-separated URLs alike) and the values of query parameters whose
// name says password, secret, token or key.
func Redact(s Setting, v string) string {
	switch {
	case v == "":
		return ""
	case s.Secret:
		return Redacted
	}
	return redactQuery(redactUserinfo(v))
}

// redactUserinfo replaces what comes before each '@' back to the start of
// its URL's authority (after "://"), else back to a comma or the start of
// v. It errs toward redacting too much: a password may hold a comma, or an
// unescaped '@'.
func redactUserinfo(v string) string {
	var out strings.Builder
	for {
		at := strings.IndexByte(v, '@')
		if at < 0 {
			out.WriteString(v)
			return out.String()
		}
		start := 0
		if i := strings.LastIndex(v[:at], "://"); i >= 0 {
			start = i + len("://")
		} else if i := strings.LastIndexByte(v[:at], ','); i >= 0 {
			start = i + 1
		}
		out.WriteString(v[:start])
		out.WriteString(Redacted)
		out.WriteByte('@')
		v = v[at+1:]
	}
}

// redactQuery replaces the values of query parameters whose name says
// password, secret, token or key.
func redactQuery(v string) string {
	q := strings.IndexByte(v, '?')
	if q < 0 {
		return v
	}
	params := strings.Split(v[q+1:], "&")
	for i, p := range params {
		name, _, ok := strings.Cut(p, "=")
		if ok && sensitive(name) {
			params[i] = name + "=" + Redacted
		}
	}
	return v[:q+1] + strings.Join(params, "&")
}

func sensitive(name string) bool {
	name = strings.ToLower(name)
	for _, w := range []string{"pass", "secret", "token", "key"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}
