package protect

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHeaderIdentity: the header is believed from a trusted peer only
// (app.Test's peer is 0.0.0.0), once, and when it names a usable user.
func TestHeaderIdentity(t *testing.T) {
	trusting, err := NewHeaderIdentity("", []string{"0.0.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewHeaderIdentity("X-Shop-User", []string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		id     Identity
		lines  [][2]string
		status int
		body   string
	}{
		{"trusted peer", trusting, [][2]string{{"X-User-ID", "alice"}}, 200, "alice"},
		{"missing", trusting, nil, 401, "missing X-User-ID"},
		{"unusable", trusting, [][2]string{{"X-User-ID", strings.Repeat("u", 129)}}, 401, "printable"},
		{"two lines", trusting, [][2]string{{"X-User-ID", "mallory"}, {"X-User-ID", "alice"}}, 400, "once"},
		{"two equal lines", trusting, [][2]string{{"X-User-ID", "alice"}, {"X-User-ID", "alice"}}, 400, "once"},
		{"untrusted peer", other, [][2]string{{"X-Shop-User", "alice"}}, 401, "trusted proxy"},
		{"zero value", HeaderIdentity{}, [][2]string{{"X-User-ID", "alice"}}, 401, "trusted proxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/", nil)
			for _, l := range tc.lines {
				req.Header.Add(l[0], l[1])
			}
			resp, err := identityApp(tc.id, false).Test(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b strings.Builder
			_, _ = io.Copy(&b, resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(b.String(), tc.body) {
				t.Errorf("got %d %s, want %d containing %q", resp.StatusCode, b.String(), tc.status, tc.body)
			}
		})
	}
	if _, err := NewHeaderIdentity("", nil); err == nil || !strings.Contains(err.Error(), "ANTEROOM_TRUSTED_PROXIES") {
		t.Errorf("header mode without trusted proxies: %v, want an error naming ANTEROOM_TRUSTED_PROXIES", err)
	}
	if _, err := NewHeaderIdentity("", []string{"gateway.example"}); err == nil {
		t.Errorf("a host name as trusted proxy was accepted")
	}
}
