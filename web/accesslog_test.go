package web_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/anteroom/anteroom/web"
)

func TestParseAccessLog(t *testing.T) {
	for in, want := range map[string]web.AccessLog{"off": web.AccessLogOff, "errors": web.AccessLogErrors, "all": web.AccessLogAll} {
		if got, err := web.ParseAccessLog(in); err != nil || got != want {
			t.Errorf("ParseAccessLog(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "ALL", "verbose"} {
		if _, err := web.ParseAccessLog(in); err == nil {
			t.Errorf("ParseAccessLog(%q) accepted", in)
		}
	}
}

// TestAccessLogModes sends one good request (200) and one failing one
// (/readyz answering 503) in each mode and counts access-log lines.
func TestAccessLogModes(t *testing.T) {
	for _, c := range []struct {
		name     string
		mode     web.AccessLog
		slow     time.Duration
		want     int    // access-log lines for the two requests
		wantSlow string // "true" when the good request must be logged as slow
	}{
		{"default is errors", "", 0, 1, ""},
		{"errors", web.AccessLogErrors, 0, 1, ""},
		{"off", web.AccessLogOff, 0, 0, ""},
		{"all", web.AccessLogAll, 0, 2, ""},
		{"errors logs slow requests", web.AccessLogErrors, time.Nanosecond, 2, "true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			cfg := web.Config{Log: slog.New(slog.NewJSONHandler(&buf, nil)), AccessLog: c.mode, SlowRequest: c.slow}
			_, do := edge(t, cfg, func(context.Context) error { return errors.New("redis: down") })
			do("GET", "/healthz").Body.Close()
			do("GET", "/readyz").Body.Close() // 503 degraded: not a 5xx the access log hides
			var n int
			for _, l := range logLines(t, &buf) {
				if l["msg"] != "request" {
					continue
				}
				n++
				for _, k := range []string{"request_id", "method", "route", "status", "duration_ms"} {
					if _, ok := l[k]; !ok {
						t.Errorf("access line %v lacks %s", l, k)
					}
				}
				if l["route"] == "/healthz" && c.wantSlow == "true" && l["slow"] != true {
					t.Errorf("slow request logged as %v", l)
				}
			}
			if n != c.want {
				t.Errorf("%d access-log lines, want %d:\n%s", n, c.want, buf.String())
			}
		})
	}
}
