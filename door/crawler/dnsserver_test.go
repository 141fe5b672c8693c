package crawler

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// dnsServer is a DNS server on loopback answering PTR, A and AAAA queries
// from its maps, counting the queries it receives. Silent, it answers
// nothing; held, it answers once released.
type dnsServer struct {
	t    testing.TB
	addr string

	mu      sync.Mutex
	ptr     map[string][]string     // reverse name → PTR names
	ips     map[string][]netip.Addr // name → its A and AAAA addresses
	queries map[string]int          // "PTR name." → how many
	gate    chan struct{}           // non-nil: answers wait for it to close

	silent               atomic.Bool
	inflight, mostAtOnce atomic.Int64
}

// startDNS starts a server on a random loopback UDP port, shut down at the
// test's end.
func startDNS(t testing.TB) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &dnsServer{t: t, addr: pc.LocalAddr().String(), ptr: map[string][]string{}, ips: map[string][]netip.Addr{}, queries: map[string]int{}}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: s, NotifyStartedFunc: func() { close(started) }}
	done := make(chan error, 1)
	go func() { done <- srv.ActivateAndServe() }()
	select { // Shutdown stops only a server that has started
	case <-started:
	case err := <-done:
		t.Fatalf("dns server: %v", err)
	}
	t.Cleanup(func() {
		s.release()
		if err := srv.Shutdown(); err != nil {
			t.Errorf("dns server shutdown: %v", err)
			_ = pc.Close()
		}
		<-done
	})
	return s
}

// resolver is a resolver asking only s.
func (s *dnsServer) resolver(t testing.TB) *net.Resolver {
	t.Helper()
	r, err := ResolverAt(s.addr)
	if err != nil {
		t.Fatalf("ResolverAt(%s): %v", s.addr, err)
	}
	return r
}

// setPTR gives addr the PTR names names.
func (s *dnsServer) setPTR(addr string, names ...string) {
	s.t.Helper()
	rev, err := dns.ReverseAddr(addr)
	if err != nil {
		s.t.Fatalf("reverse name of %q: %v", addr, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ptr[rev] = names
}

// setIPs gives name the addresses addrs (none: the name does not exist).
func (s *dnsServer) setIPs(name string, addrs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(dns.Fqdn(name))
	delete(s.ips, key)
	for _, a := range addrs {
		s.ips[key] = append(s.ips[key], netip.MustParseAddr(a))
	}
}

// count is how many queries of type qtype ("PTR", "A", "AAAA") for name
// (an address for PTR) the server received.
func (s *dnsServer) count(qtype, name string) int {
	if qtype == "PTR" {
		name, _ = dns.ReverseAddr(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[qtype+" "+strings.ToLower(dns.Fqdn(name))]
}

// total is how many queries of type qtype the server received.
func (s *dnsServer) total(qtype string) int {
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

// hold makes answers wait until release.
func (s *dnsServer) hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
}

// release lets held answers go (and later ones answer at once).
func (s *dnsServer) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		close(s.gate)
		s.gate = nil
	}
}

// ServeDNS answers one query from the maps: NXDOMAIN for a name it does
// not know, an empty answer for a known name with no record of the type.
func (s *dnsServer) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
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
		n := s.inflight.Add(1)
		for m := s.mostAtOnce.Load(); n > m && !s.mostAtOnce.CompareAndSwap(m, n); m = s.mostAtOnce.Load() {
		}
		select {
		case <-gate:
		case <-time.After(time.Minute):
		}
		s.inflight.Add(-1)
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
	m.Truncate(size) // a larger answer would not be read: the resolver asks again over TCP, which this server does not serve
	_ = w.WriteMsg(m)
}
