package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestGatewayFailOpenCommand runs `anteroom gateway fail-open` as
// docs/operate.md shows it: -until prints the map entry of the deadline
// (whole seconds, UTC), -off an entry-less body; a deadline in the past,
// more than 24 h ahead, not RFC 3339, both flags or neither is refused
// with nothing printed.
func TestGatewayFailOpenCommand(t *testing.T) {
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var out, errs bytes.Buffer
	if err := gateway([]string{"fail-open", "-until", "2026-12-07T06:00:00Z"}, clock, &out, &errs); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^"~\^\(\?:[0-9\[\]{},|-]+\)\[\.\]" "2026-12-07T06:00:00Z";$`).MatchString(out.String()) ||
		!strings.Contains(errs.String(), "/etc/nginx/anteroom-fail-open.map") {
		t.Fatalf("-until: %q (stderr %q), want one map entry and where it goes", out.String(), errs.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"gateway", "fail-open", "-off"}, func(string) string { return "" }, &out, &errs); err != nil ||
		strings.Contains(out.String(), `"~`) || !strings.HasPrefix(out.String(), "#") {
		t.Fatalf("-off: %v %q, want comments only", err, out.String())
	}
	for _, args := range [][]string{
		{"fail-open", "-until", "2026-12-07T03:59:59Z"},
		{"fail-open", "-until", "2026-12-07T04:00:00Z"},
		{"fail-open", "-until", "2026-12-08T04:00:01Z"},
		{"fail-open", "-until", "tomorrow"},
		{"fail-open", "-until", "2026-12-07T06:00:00Z", "-off"},
		{"fail-open"},
		{"fail-open", "extra"},
		{"open"},
		{},
	} {
		out.Reset()
		if err := gateway(args, clock, &out, &errs); err == nil || out.Len() != 0 {
			t.Errorf("gateway %q: %v, printed %q; want an error and nothing printed", args, err, out.String())
		}
	}
}
