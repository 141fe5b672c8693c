package netguard_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/netguard"
)

// TestClass: real failures of real requests get their class, and the
// class never holds the error's text.
func TestClass(t *testing.T) {
	allowed, err := netguard.Allow([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(tlsSrv.Close)
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(slow.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	get := func(c *http.Client, u string) error {
		resp, err := c.Get(u)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"refused target", get(netguard.Policy{}.Client(0), "http://127.0.0.1:1/"), netguard.ClassRefusedTarget},
		{"untrusted certificate", get(allowed.Client(0), tlsSrv.URL), netguard.ClassTLS},
		{"timeout", get(allowed.Client(100*time.Millisecond), slow.URL), netguard.ClassTimeout},
		{"nothing listening", get(allowed.Client(0), "http://"+addr+"/"), netguard.ClassConnect},
		{"no such name", &url.Error{Op: "Get", URL: "http://x.invalid/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}}, netguard.ClassDNS},
		{"a tls alert", fmt.Errorf("wrapped: %w", tls.AlertError(40)), netguard.ClassTLS},
		{"deadline", context.DeadlineExceeded, netguard.ClassTimeout},
		{"other", errors.New("boom"), netguard.ClassError},
	}
	for _, c := range cases {
		if got := netguard.Class(c.err); got != c.want {
			t.Errorf("%s: Class(%v) = %q, want %q", c.name, c.err, got, c.want)
		}
	}
}
