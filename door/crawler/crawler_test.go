package crawler

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/internal/wait"
)

// fakeClock is a Verifier's clock that tests move.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() int64          { return c.ns.Load() }
func (c *fakeClock) add(d time.Duration) { c.ns.Add(int64(d)) }

// newVerifier is a Verifier of cfg asking s, on a clock the test moves,
// closed at the test's end.
func newVerifier(t *testing.T, s *testenv.DNS, cfg Config) (*Verifier, *fakeClock) {
	t.Helper()
	r, err := ResolverAt(s.Addr())
	if err != nil {
		t.Fatalf("ResolverAt(%s): %v", s.Addr(), err)
	}
	cfg.Resolver = r
	v := New(cfg)
	clk := &fakeClock{}
	clk.ns.Store(time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC).UnixNano())
	v.now = clk.now
	t.Cleanup(v.Close)
	return v, clk
}

// waitVerified polls Verified(addr) until it answers true, failing the
// test after 10 s.
func waitVerified(t *testing.T, v *Verifier, addr string) {
	t.Helper()
	a := netip.MustParseAddr(addr)
	if err := wait.Until(10*time.Second, 5*time.Millisecond, func() error {
		if v.Verified(a) {
			return nil
		}
		return fmt.Errorf("Verified(%s) still false", addr)
	}); err != nil {
		t.Fatal(err)
	}
}

// waitIdle waits until v has no lookup under way.
func waitIdle(t *testing.T, v *Verifier) {
	t.Helper()
	if err := wait.Until(10*time.Second, 2*time.Millisecond, func() error {
		if n := len(v.slots); n > 0 {
			return fmt.Errorf("%d lookups still under way", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// verifiedOnce calls Verified(addr), which must answer false (nothing is
// known yet), waits for the lookup it starts and returns Verified's answer
// then.
func verifiedOnce(t *testing.T, v *Verifier, addr string) bool {
	t.Helper()
	a := netip.MustParseAddr(addr)
	if v.Verified(a) {
		t.Fatalf("Verified(%s) = true before any lookup, want false", addr)
	}
	waitIdle(t, v)
	return v.Verified(a)
}

const (
	googleV4   = "66.249.66.1"
	googleV4PT = "crawl-66-249-66-1.googlebot.com"
	googleV6   = "2001:4860:4801:10::1"
	googleV6PT = "crawl-2001-4860-4801-10--1.googlebot.com"
)

func TestGenuineGooglebot(t *testing.T) {
	s := testenv.StartDNS(t)
	s.SetPTR(googleV4, googleV4PT)
	s.SetAddrs(googleV4PT, googleV4)
	v, _ := newVerifier(t, s, Config{})

	if v.Verified(netip.MustParseAddr(googleV4)) {
		t.Fatal("Verified = true before the lookup, want false (it must not wait on DNS)")
	}
	waitVerified(t, v, googleV4)
	if got := s.Queries("PTR", googleV4); got != 1 {
		t.Errorf("PTR queries = %d, want 1", got)
	}
	if got := s.Queries("A", googleV4PT); got != 1 {
		t.Errorf("A queries = %d, want 1", got)
	}
	if st := v.Stats(); st != (Stats{Lookups: 1, Verified: 1}) {
		t.Errorf("Stats = %+v, want one lookup, verified", st)
	}
	// The answer is cached: more calls ask nothing.
	for range 100 {
		if !v.Verified(netip.MustParseAddr(googleV4)) {
			t.Fatal("Verified = false after it was verified")
		}
	}
	if got := s.TotalQueries("PTR"); got != 1 {
		t.Errorf("PTR queries after 100 cached calls = %d, want 1", got)
	}
	// The same address written as IPv4-mapped IPv6 is the same address.
	if !v.Verified(netip.MustParseAddr("::ffff:" + googleV4)) {
		t.Error("Verified(::ffff:66.249.66.1) = false, want true (the same address)")
	}
	ok, err := v.Lookup(context.Background(), netip.MustParseAddr(googleV4))
	if !ok || err != nil {
		t.Errorf("Lookup = %v, %v; want true, nil", ok, err)
	}
}

func TestSpoofedPTR(t *testing.T) {
	s := testenv.StartDNS(t)
	// The attacker owns 203.0.113.7's reverse zone and names it a
	// Googlebot; Google's zone says that name is another address.
	s.SetPTR("203.0.113.7", "crawl-66-249-66-9.googlebot.com")
	s.SetAddrs("crawl-66-249-66-9.googlebot.com", "66.249.66.9")
	// And a PTR naming a Googlebot that does not exist at all.
	s.SetPTR("203.0.113.8", "crawl-nowhere.googlebot.com")
	v, _ := newVerifier(t, s, Config{})

	for _, addr := range []string{"203.0.113.7", "203.0.113.8"} {
		if verifiedOnce(t, v, addr) {
			t.Errorf("Verified(%s) = true, want false: its PTR's forward name is not it", addr)
		}
		ok, err := v.Lookup(context.Background(), netip.MustParseAddr(addr))
		if ok || err != nil {
			t.Errorf("Lookup(%s) = %v, %v; want false, nil", addr, ok, err)
		}
	}
	if got := s.Queries("A", "crawl-66-249-66-9.googlebot.com"); got == 0 {
		t.Error("the forward name was never looked up: the PTR alone decided")
	}
}

func TestSuffixTricks(t *testing.T) {
	s := testenv.StartDNS(t)
	v, _ := newVerifier(t, s, Config{})
	// Every forward name resolves back to its address: only the domain
	// check stands between these and a verified answer.
	for i, tc := range []struct {
		name string
		want bool
	}{
		{"crawl-1.googlebot.com", true},
		{"CRAWL-2.GoogleBot.COM", true},
		{"googlebot.com", true},
		{"rate-limited-proxy-3.google.com", true},
		{"4.applebot.apple.com", true},
		{"msnbot-5.search.msn.com", true},
		{"evilgooglebot.com", false},
		{"crawl-7.evilgooglebot.com", false},
		{"googlebot.com.evil.net", false},
		{"crawl-9.googlebot.com.evil.net", false},
		{"googlebot.co", false},
		{"xgoogle.com", false},
		{"apple.com", false}, // Apple's crawlers are under applebot.apple.com only
		{"msn.com", false},
	} {
		addr := fmt.Sprintf("198.51.100.%d", i+1)
		s.SetPTR(addr, tc.name)
		s.SetAddrs(tc.name, addr)
		ok, err := v.Lookup(context.Background(), netip.MustParseAddr(addr))
		if ok != tc.want || err != nil {
			t.Errorf("PTR %s: Lookup = %v, %v; want %v, nil", tc.name, ok, err, tc.want)
		}
		if !tc.want && s.Queries("A", tc.name) != 0 {
			t.Errorf("PTR %s: its forward name was looked up, want no query for a name under no crawler domain", tc.name)
		}
	}
}

func TestIPv6Googlebot(t *testing.T) {
	s := testenv.StartDNS(t)
	s.SetPTR(googleV6, googleV6PT)
	s.SetAddrs(googleV6PT, googleV6)
	s.SetPTR("2001:db8::66", googleV6PT) // spoofed: the name is not this address
	v, _ := newVerifier(t, s, Config{})

	waitVerified(t, v, googleV6)
	if got := s.Queries("PTR", googleV6); got != 1 {
		t.Errorf("ip6.arpa PTR queries = %d, want 1", got)
	}
	if verifiedOnce(t, v, "2001:db8::66") {
		t.Error("Verified(2001:db8::66) = true, want false: its PTR names another address")
	}
	// A zone does not make another address.
	if !v.Verified(netip.MustParseAddr(googleV6 + "%eth0")) {
		t.Errorf("Verified(%s%%eth0) = false, want the address's answer", googleV6)
	}
}

func TestSeveralPTRs(t *testing.T) {
	s := testenv.StartDNS(t)
	// A shared host: its first name is no crawler's, its second a
	// genuine Googlebot.
	s.SetPTR("66.249.66.20", "host-20.example.net", "crawl-66-249-66-20.googlebot.com")
	s.SetAddrs("host-20.example.net", "66.249.66.20")
	s.SetAddrs("crawl-66-249-66-20.googlebot.com", "66.249.66.20")
	// Two Googlebot names, the first of which resolves elsewhere.
	s.SetPTR("66.249.66.21", "crawl-a.googlebot.com", "crawl-b.googlebot.com")
	s.SetAddrs("crawl-a.googlebot.com", "66.249.66.99")
	s.SetAddrs("crawl-b.googlebot.com", "66.249.66.21", "2001:4860::21")
	// Many names, all under googlebot.com and none resolving to it: more
	// than a UDP answer holds (the resolver asks again over TCP).
	var many []string
	for i := range 60 {
		many = append(many, fmt.Sprintf("crawl-x%d-padded-to-make-the-answer-long.googlebot.com", i))
	}
	s.SetPTR("66.249.66.22", many...)
	v, _ := newVerifier(t, s, Config{})

	for _, addr := range []string{"66.249.66.20", "66.249.66.21"} {
		if ok, err := v.Lookup(context.Background(), netip.MustParseAddr(addr)); !ok || err != nil {
			t.Errorf("Lookup(%s) = %v, %v; want true, nil", addr, ok, err)
		}
	}
	if got := s.Queries("A", "host-20.example.net"); got != 0 {
		t.Errorf("A queries for host-20.example.net = %d, want 0 (under no crawler domain)", got)
	}
	if ok, err := v.Lookup(context.Background(), netip.MustParseAddr("66.249.66.22")); ok || err != nil {
		t.Errorf("Lookup(66.249.66.22) = %v, %v; want false, nil", ok, err)
	}
	if got := s.Queries("PTR", "66.249.66.22"); got != 2 {
		t.Errorf("PTR queries for 60 names = %d, want 2 (UDP, truncated, then TCP)", got)
	}
	if got := s.TotalQueries("A"); got > 3+maxNames {
		t.Errorf("A queries = %d, want at most %d: an address's owner may not make us check 60 names", got, 3+maxNames)
	}
}

func TestDNSTimeout(t *testing.T) {
	s := testenv.StartDNS(t)
	s.SetPTR(googleV4, googleV4PT)
	s.SetAddrs(googleV4PT, googleV4)
	s.SetSilent(true)
	v, _ := newVerifier(t, s, Config{Timeout: 300 * time.Millisecond})
	a := netip.MustParseAddr(googleV4)

	start := time.Now()
	if v.Verified(a) {
		t.Fatal("Verified = true with a DNS server that does not answer")
	}
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("Verified took %s, want no wait on DNS", took)
	}
	waitIdle(t, v)
	if v.Verified(a) {
		t.Error("Verified = true after the lookup timed out, want false")
	}
	if st := v.Stats(); st != (Stats{Lookups: 1, Failed: 1}) {
		t.Errorf("Stats = %+v, want one lookup, failed", st)
	}
	start = time.Now()
	ok, err := v.Lookup(context.Background(), a)
	if took := time.Since(start); ok || err == nil || took > 5*time.Second {
		t.Errorf("Lookup = %v, %v after %s; want false and an error within the 300ms timeout", ok, err, took)
	}
	if !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Errorf("Lookup's error = %v, want a timeout", err)
	}
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}

func TestNegativeCache(t *testing.T) {
	s := testenv.StartDNS(t)
	s.SetPTR("203.0.113.50", "host.example.net") // no crawler
	v, clk := newVerifier(t, s, Config{NegativeTTL: time.Hour})
	none := "203.0.113.51" // no PTR at all: NXDOMAIN

	for _, addr := range []string{"203.0.113.50", none} {
		if verifiedOnce(t, v, addr) {
			t.Fatalf("Verified(%s) = true, want false", addr)
		}
	}
	before := s.TotalQueries("PTR")
	clk.add(59 * time.Minute)
	for range 200 {
		v.Verified(netip.MustParseAddr("203.0.113.50"))
		v.Verified(netip.MustParseAddr(none))
	}
	waitIdle(t, v)
	if got := s.TotalQueries("PTR"); got != before {
		t.Errorf("PTR queries within the negative TTL: %d, want still %d", got, before)
	}
	// Past it, the address is looked up again (and verified, now that
	// its PTR says so).
	s.SetPTR(none, "crawl-51.googlebot.com")
	s.SetAddrs("crawl-51.googlebot.com", none)
	clk.add(2 * time.Minute)
	waitVerified(t, v, none)
	if got := s.Queries("PTR", none); got != 2 {
		t.Errorf("PTR queries for %s = %d, want 2 (one per negative TTL)", none, got)
	}
}

func TestPositiveTTLReverifies(t *testing.T) {
	s := testenv.StartDNS(t)
	s.SetPTR(googleV4, googleV4PT)
	s.SetAddrs(googleV4PT, googleV4)
	v, clk := newVerifier(t, s, Config{TTL: 24 * time.Hour})
	a := netip.MustParseAddr(googleV4)

	waitVerified(t, v, googleV4)
	clk.add(23 * time.Hour)
	if !v.Verified(a) || s.Queries("PTR", googleV4) != 1 {
		t.Fatalf("within the TTL: Verified = %v after %d PTR queries, want true after 1", v.Verified(a), s.Queries("PTR", googleV4))
	}
	// Google moved the address away: the next verification says so.
	s.SetAddrs(googleV4PT, "66.249.66.2")
	clk.add(2 * time.Hour)
	if verifiedOnce(t, v, googleV4) {
		t.Error("Verified = true after the TTL although the forward name no longer resolves to it")
	}
	if got := s.Queries("PTR", googleV4); got != 2 {
		t.Errorf("PTR queries = %d, want 2: the expired answer was verified again", got)
	}
	// And back.
	s.SetAddrs(googleV4PT, googleV4)
	clk.add(2 * time.Hour)
	waitVerified(t, v, googleV4)
}

func TestNeverLookedUp(t *testing.T) {
	s := testenv.StartDNS(t)
	v, _ := newVerifier(t, s, Config{})
	for _, a := range []netip.Addr{{}, netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.1.2.3"),
		netip.MustParseAddr("192.168.0.1"), netip.MustParseAddr("::1"), netip.MustParseAddr("fe80::1"),
		netip.MustParseAddr("fd00::1"), netip.MustParseAddr("224.0.0.1"), netip.MustParseAddr("0.0.0.0")} {
		if v.Verified(a) {
			t.Errorf("Verified(%v) = true", a)
		}
		if ok, err := v.Lookup(context.Background(), a); ok || err != nil {
			t.Errorf("Lookup(%v) = %v, %v; want false, nil", a, ok, err)
		}
	}
	if n := len(v.slots); n != 0 || s.TotalQueries("PTR") != 0 {
		t.Errorf("%d lookups started, %d PTR queries; want none for addresses no crawler has", n, s.TotalQueries("PTR"))
	}
}

func TestCustomDomains(t *testing.T) {
	s := testenv.StartDNS(t)
	s.SetPTR("203.0.113.60", "bot-1.crawler.example")
	s.SetAddrs("bot-1.crawler.example", "203.0.113.60")
	s.SetPTR(googleV4, googleV4PT)
	s.SetAddrs(googleV4PT, googleV4)
	// Invalid domains are left out: "example" alone would make every
	// host under it a crawler.
	v, _ := newVerifier(t, s, Config{Domains: []string{"Crawler.Example.", "example", "bad..name"}})
	if ok, err := v.Lookup(context.Background(), netip.MustParseAddr("203.0.113.60")); !ok || err != nil {
		t.Errorf("Lookup under a configured domain = %v, %v; want true, nil", ok, err)
	}
	if ok, _ := v.Lookup(context.Background(), netip.MustParseAddr(googleV4)); ok {
		t.Error("Lookup of a Googlebot = true with Domains naming only crawler.example")
	}
	if got := []string(v.domains); len(got) != 1 || got[0] != "crawler.example" {
		t.Errorf("domains = %q, want [crawler.example]", got)
	}
}

// TestFailedLookupRetriedSoon: a lookup that timed out proves nothing.
// Past Config.FailedTTL (a minute), well within the hour of a definite
// no, the address is looked up again and a genuine crawler verified.
func TestFailedLookupRetriedSoon(t *testing.T) {
	s := testenv.StartDNS(t)
	s.SetPTR(googleV4, googleV4PT)
	s.SetAddrs(googleV4PT, googleV4)
	s.SetSilent(true)
	v, clk := newVerifier(t, s, Config{Timeout: 200 * time.Millisecond})
	if verifiedOnce(t, v, googleV4) {
		t.Fatal("Verified = true with a DNS server that does not answer")
	}
	s.SetSilent(false)
	clk.add(30 * time.Second)
	if verifiedOnce(t, v, googleV4) {
		t.Fatal("Verified = true within FailedTTL: the failure is still cached, want false")
	}
	clk.add(31 * time.Second)
	waitVerified(t, v, googleV4)
	if st := v.Stats(); st.Failed != 1 || st.Verified != 1 {
		t.Errorf("Stats = %+v, want one failed lookup, then one verified", st)
	}
}
