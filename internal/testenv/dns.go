package testenv

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// DNS is a DNS server on loopback (UDP) answering PTR, A and AAAA
// queries from its tables, counting the queries it receives: the reverse
// and forward names a test gives addresses (package door/crawler's
// verified crawlers). Silent, it answers nothing; held, it answers once
// released. SetPTR and SetAddrs fail the test on a malformed address, so
// call them from its goroutine; the other methods are safe for
// concurrent use.
type DNS struct {
	t    testing.TB
	addr string

	mu      sync.Mutex
	ptr     map[string][]string     // reverse name → PTR names
	ips     map[string][]netip.Addr // name → its A and AAAA addresses
	queries map[string]int          // "PTR name." → how many
	gate    chan struct{}           // non-nil: answers wait for it to close

	silent         atomic.Bool
	held, mostHeld atomic.Int64
}

// StartDNS starts a DNS server on a random loopback port, UDP and TCP,
// shut down at the test's end. It knows no name until SetPTR and
// SetAddrs.
func StartDNS(t testing.TB) *DNS {
	t.Helper()
	pc, ln := listenDNS(t)
	s := &DNS{t: t, addr: pc.LocalAddr().String(), ptr: map[string][]string{}, ips: map[string][]netip.Addr{}, queries: map[string]int{}}
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: s}, {Listener: ln, Handler: s}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		done := make(chan error, 1)
		go func() { done <- srv.ActivateAndServe() }()
		select { // Shutdown stops only a server that has started
		case <-started:
		case err := <-done:
			t.Fatalf("dns server: %v", err)
		}
		t.Cleanup(func() {
			s.Release()
			if err := srv.Shutdown(); err != nil {
				t.Errorf("dns server shutdown: %v", err)
			}
			<-done
		})
	}
	return s
}

// listenDNS opens a UDP socket and a TCP listener on one loopback port.
func listenDNS(t testing.TB) (net.PacketConn, net.Listener) {
	t.Helper()
	var err error
	for range 20 {
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			continue
		}
		var ln net.Listener
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			return pc, ln
		}
		_ = pc.Close() // its port is taken in TCP: another
	}
	t.Fatalf("dns server: no loopback port free in UDP and TCP: %v", err)
	return nil, nil
}

// Addr is the server's address, host:port.
func (s *DNS) Addr() string { return s.addr }

// Resolver is a Go resolver asking only s.
func (s *DNS) Resolver() *net.Resolver {
	var d net.Dialer
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, s.addr)
	}}
}

// SetPTR gives addr (an IPv4 or IPv6 address) the PTR names names,
// replacing those it had.
func (s *DNS) SetPTR(addr string, names ...string) {
	s.t.Helper()
	rev, err := dns.ReverseAddr(addr)
	if err != nil {
		s.t.Fatalf("reverse name of %q: %v", addr, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ptr[rev] = names
}

// SetAddrs gives name its A and AAAA records: addrs, replacing those it
// had (none: the name does not exist).
func (s *DNS) SetAddrs(name string, addrs ...string) {
	s.t.Helper()
	var ips []netip.Addr
	for _, a := range addrs {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			s.t.Fatalf("address of %s: %v", name, err)
		}
		ips = append(ips, ip)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(dns.Fqdn(name))
	delete(s.ips, key)
	if len(ips) > 0 {
		s.ips[key] = ips
	}
}

// Queries is how many queries of type qtype ("PTR", "A", "AAAA") for
// name (for PTR, the address) the server received.
func (s *DNS) Queries(qtype, name string) int {
	if qtype == "PTR" {
		name, _ = dns.ReverseAddr(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[qtype+" "+strings.ToLower(dns.Fqdn(name))]
}

// TotalQueries is how many queries of type qtype the server received.
func (s *DNS) TotalQueries(qtype string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, c := range s.queries {
		if strings.HasPrefix(k, qtype+" ") {
			n += c
		}
	}
	return n
}

// Hold makes answers wait until Release (at most a minute).
func (s *DNS) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
}

// Release lets held answers go, and later ones answer at once.
func (s *DNS) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

// SetSilent makes the server answer nothing (a resolver then times out)
// or answer again.
func (s *DNS) SetSilent(silent bool) { s.silent.Store(silent) }

// Held is how many answers wait for Release now.
func (s *DNS) Held() int64 { return s.held.Load() }

// MostHeld is the most answers that waited for Release at once.
func (s *DNS) MostHeld() int64 { return s.mostHeld.Load() }

// ServeDNS answers one query from the maps: NXDOMAIN for a name it does
// not know, an empty answer for a known name with no record of the type.
func (s *DNS) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	if len(r.Question) != 1 {
		return
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	s.mu.Lock()
	s.queries[dns.TypeToString[q.Qtype]+" "+name]++
	gate := s.gate
	names, isPTR := s.ptr[name]
	ips, isHost := s.ips[name]
	s.mu.Unlock()
	if s.silent.Load() {
		return
	}
	if gate != nil {
		n := s.held.Add(1)
		for m := s.mostHeld.Load(); n > m && !s.mostHeld.CompareAndSwap(m, n); m = s.mostHeld.Load() {
		}
		select {
		case <-gate:
		case <-time.After(time.Minute):
		}
		s.held.Add(-1)
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative, m.RecursionAvailable = true, true
	hdr := dns.RR_Header{Name: q.Name, Rrtype: q.Qtype, Class: dns.ClassINET, Ttl: 60}
	switch {
	case !isPTR && !isHost:
		m.Rcode = dns.RcodeNameError
	case q.Qtype == dns.TypePTR:
		for _, n := range names {
			m.Answer = append(m.Answer, &dns.PTR{Hdr: hdr, Ptr: dns.Fqdn(n)})
		}
	case q.Qtype == dns.TypeA:
		for _, a := range ips {
			if a.Is4() {
				m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: a.AsSlice()})
			}
		}
	case q.Qtype == dns.TypeAAAA:
		for _, a := range ips {
			if a.Is6() {
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
			}
		}
	}
	m.Compress = true
	size := dns.MinMsgSize
	if o := r.IsEdns0(); o != nil {
		size = int(o.UDPSize())
	}
	if w.RemoteAddr().Network() == "udp" {
		m.Truncate(size) // the resolver asks again over TCP
	}
	_ = w.WriteMsg(m)
}
