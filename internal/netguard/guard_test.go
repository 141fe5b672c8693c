package netguard_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/anteroom/anteroom/internal/netguard"
)

// TestCheck: the default Policy refuses every non-public address, in
// every spelling a URL may give it; Allow lets chosen networks through
// and nothing else.
func TestCheck(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.255.0.9", "::1", "::", "0.0.0.0", "0.1.2.3",
		"10.0.0.1", "172.16.5.5", "192.168.1.1", "fc00::1", "fd00:ec2::254",
		"169.254.169.254", "169.254.0.1", "fe80::1", "fe80::1%eth0",
		"100.64.0.1", "100.127.255.254", "224.0.0.1", "ff02::1", "255.255.255.255", "240.0.0.1",
		"198.18.0.1", "192.0.0.8", "2001:db8::1",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1", "::127.0.0.1",
		"64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "2002:a9fe:a9fe::1", "2002:c0a8:101::1",
	}
	public := []string{"8.8.8.8", "1.1.1.1", "203.0.114.1", "100.128.0.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"}
	var def netguard.Policy
	for _, s := range refused {
		if err := def.Check(netip.MustParseAddr(s)); !errors.Is(err, netguard.ErrRefused) {
			t.Errorf("default Check(%s) = %v, want ErrRefused", s, err)
		}
	}
	for _, s := range public {
		if err := def.Check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("default Check(%s) = %v, want allowed", s, err)
		}
	}
	p, err := netguard.Allow([]string{"10.1.0.0/16", " 127.0.0.1 ", "fd00:1::/64", "::ffff:192.168.7.0/120"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"10.1.2.3", "127.0.0.1", "::ffff:127.0.0.1", "fd00:1::5", "192.168.7.9", "8.8.8.8"} {
		if err := p.Check(netip.MustParseAddr(s)); err != nil {
			t.Errorf("allowed Check(%s) = %v, want allowed", s, err)
		}
	}
	for _, s := range []string{"10.2.0.1", "127.0.0.2", "::1", "fd00:2::1", "192.168.8.1", "169.254.169.254"} {
		if err := p.Check(netip.MustParseAddr(s)); !errors.Is(err, netguard.ErrRefused) {
			t.Errorf("allowed Check(%s) = %v, want ErrRefused", s, err)
		}
	}
	for _, bad := range []string{"10.1.0.0/33", "example.com", "fe80::1%eth0", "10.0.0.0/8/8"} {
		if _, err := netguard.Allow([]string{bad}); err == nil {
			t.Errorf("Allow(%q) accepted", bad)
		}
	}
}

// TestClientRefusesAtDial: a client on the Policy's Transport is refused
// at dial time (nothing reaches the server), whatever the URL's host
// spelling (a name resolving to loopback included), and the failure's
// class is refused_target; an allowed network gets through.
func TestClientRefusesAtDial(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	c := netguard.Policy{}.Client(0)
	for _, target := range []string{srv.URL, "http://localhost:" + u.Port(), "http://[::ffff:127.0.0.1]:" + u.Port()} {
		resp, err := c.Get(target)
		if err == nil {
			resp.Body.Close()
		}
		if !errors.Is(err, netguard.ErrRefused) || netguard.Class(err) != netguard.ClassRefusedTarget {
			t.Errorf("GET %s: %v (class %q), want refused_target", target, err, netguard.Class(err))
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server saw %d requests, want 0", n)
	}
	allowed, err := netguard.Allow([]string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := allowed.Client(0).Get(srv.URL)
	if err != nil {
		t.Fatalf("GET %s with loopback allowed: %v", srv.URL, err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Errorf("the server saw %d requests, want 1", hits.Load())
	}
}

// TestRedirectRefused: a client that follows redirects on the Policy's
// Transport is refused the redirect's target when the Policy refuses it,
// though the first target was allowed: every connection is judged.
func TestRedirectRefused(t *testing.T) {
	var inner atomic.Int64
	private := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { inner.Add(1) }))
	t.Cleanup(private.Close)
	pu, _ := url.Parse(private.URL)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The same server's port on another loopback address: refused
		// unless allowed.
		http.Redirect(w, r, "http://127.0.0.2:"+pu.Port()+"/secret", http.StatusFound)
	}))
	t.Cleanup(front.Close)
	p, err := netguard.Allow([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: p.Transport()} // follows redirects
	resp, err := c.Get(front.URL)
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, netguard.ErrRefused) || netguard.Class(err) != netguard.ClassRefusedTarget {
		t.Fatalf("GET %s redirected to 127.0.0.2: %v, want refused_target", front.URL, err)
	}
	if inner.Load() != 0 {
		t.Errorf("the redirect's target saw %d requests, want 0", inner.Load())
	}
}
