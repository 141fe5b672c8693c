// Package crawler verifies search-engine crawlers by their address: the
// rule function verified_crawler() (door.Crawlers), meant for safety-net
// rooms in front of a whole site, which let a search engine's crawler
// past while people queue.
//
// An address is a verified crawler only when its reverse-DNS name (PTR) is
// one of a crawler's published domains or under one at a label boundary
// (Vendors: crawl-66-249-66-1.googlebot.com is under googlebot.com,
// evilgooglebot.com and googlebot.com.evil.net are not) AND that name
// resolves forward (A or AAAA) to the same address: the method Google and
// Bing document. Whoever owns an address writes its PTR record, so the
// reverse name alone proves nothing; only the vendor writes the forward
// records of its domain. A user agent, which any client sets, is never
// evidence.
//
// Verified never waits on DNS: an address not known yet answers false and
// is looked up in the background, at most Config.MaxLookups addresses at
// a time and one lookup per address, each bounded by Config.Timeout. The
// answers are cached (a verified one for Config.TTL, a definite no for
// Config.NegativeTTL, a failed lookup for Config.FailedTTL) for at most
// Config.MaxAddrs addresses, the oldest evicted first. A cache hit takes one shard's read lock and allocates
// nothing.
package crawler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Config tunes a Verifier. The zero Config is usable: every field has a
// default.
type Config struct {
	// Resolver answers the PTR, A and AAAA queries (ResolverAt makes one
	// asking a given DNS server).
	//
	// Default: net.DefaultResolver (the system's)
	Resolver *net.Resolver
	// Domains are the crawlers' published domains, host names of two
	// labels or more (CheckDomain); others are left out.
	//
	// Default: DefaultDomains()
	Domains []string
	// TTL is how long a verified answer is believed before the address is
	// verified again.
	//
	// Default: 24h
	TTL time.Duration
	// NegativeTTL is how long a definite "not a crawler" (no PTR name
	// under a crawler's domain, or none resolving back) is kept before the
	// address may be looked up again.
	//
	// Default: 1h
	NegativeTTL time.Duration
	// FailedTTL is how long a lookup that failed or timed out (a DNS
	// outage proves nothing) is kept before the address may be looked up
	// again: short, so a resolver's bad minute does not queue a search
	// engine for an hour.
	//
	// Default: 1m
	FailedTTL time.Duration
	// Timeout bounds one address's lookups, reverse and forward.
	//
	// Default: 2s
	Timeout time.Duration
	// MaxAddrs bounds the addresses cached (answers and lookups under
	// way); past it, the oldest stored is evicted.
	//
	// Default: 100000
	MaxAddrs int
	// MaxLookups bounds the lookups under way; past it an unknown address
	// answers false and starts none until one ends (it is looked up at a
	// later request).
	//
	// Default: 16
	MaxLookups int
}

// The defaults of Config.
const (
	DefaultTTL         = 24 * time.Hour
	DefaultNegativeTTL = time.Hour
	DefaultFailedTTL   = time.Minute
	DefaultTimeout     = 2 * time.Second
	DefaultMaxAddrs    = 100_000
	DefaultMaxLookups  = 16
)

// maxNames bounds the PTR names of one address checked forward: an
// address's owner writes its PTR records and could name many.
const maxNames = 8

// Verifier verifies crawlers' addresses (door.Crawlers). It is safe for
// concurrent use; Close stops its lookups.
type Verifier struct {
	resolver                        *net.Resolver
	domains                         domains
	ttl, negTTL, failedTTL, timeout time.Duration
	cache                           *cache
	slots                           chan struct{} // one token per lookup under way
	// now is the time on the Verifier's clock, in nanoseconds since an
	// instant of its own: the monotonic clock alone (a wall clock step
	// neither extends nor cuts a TTL; time.Now would also read the wall
	// clock, on every cache hit).
	now func() int64

	stats  counters
	ctx    context.Context // the lookups', ended by Close
	cancel context.CancelFunc
	life   sync.RWMutex // closed, and wg.Add against Close's wg.Wait
	closed bool
	wg     sync.WaitGroup
}

// New returns a Verifier of cfg, its fields' defaults filled in.
func New(cfg Config) *Verifier {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Domains == nil {
		cfg.Domains = DefaultDomains()
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.NegativeTTL <= 0 {
		cfg.NegativeTTL = DefaultNegativeTTL
	}
	if cfg.FailedTTL <= 0 {
		cfg.FailedTTL = DefaultFailedTTL
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxAddrs <= 0 {
		cfg.MaxAddrs = DefaultMaxAddrs
	}
	if cfg.MaxLookups <= 0 {
		cfg.MaxLookups = DefaultMaxLookups
	}
	ctx, cancel := context.WithCancel(context.Background())
	born := time.Now()
	return &Verifier{
		resolver: cfg.Resolver, domains: normalDomains(cfg.Domains),
		ttl: cfg.TTL, negTTL: cfg.NegativeTTL, failedTTL: cfg.FailedTTL, timeout: cfg.Timeout,
		cache: newCache(cfg.MaxAddrs), slots: make(chan struct{}, cfg.MaxLookups),
		now: func() int64 { return int64(time.Since(born)) }, ctx: ctx, cancel: cancel,
	}
}

// Verified reports whether addr is known to be a verified crawler. It
// never waits: an address with no answer cached (or an expired one)
// answers false, and a lookup starts in the background if none is under
// way for it and a lookup slot is free; a later call reads its answer.
// Addresses that are not global unicast, or private, are never crawlers
// and never looked up.
func (v *Verifier) Verified(addr netip.Addr) bool {
	addr = addr.Unmap().WithZone("")
	if !lookable(addr) {
		return false
	}
	now := v.now()
	s := v.cache.shard(addr)
	if a, ok := s.get(addr); ok && now < a.until {
		return a.verified
	}
	v.start(s, addr, now)
	return false
}

// start begins addr's lookup in the background unless one is under way,
// an answer was stored meanwhile, the Verifier is closed or every lookup
// slot is taken. Until the lookup ends, addr's answer is a pending false,
// so that a crowd from one address reads it under the read lock.
func (v *Verifier) start(s *shard, addr netip.Addr, now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.answers[addr]; ok && now < a.until {
		return
	}
	if _, ok := s.pending[addr]; ok {
		return
	}
	v.life.RLock()
	defer v.life.RUnlock()
	if v.closed {
		return
	}
	select {
	case v.slots <- struct{}{}:
	default:
		return
	}
	s.pending[addr] = struct{}{}
	s.putLocked(addr, answer{until: now + int64(v.timeout)})
	v.wg.Add(1)
	go v.verify(s, addr)
}

// verify looks addr up, stores its answer and frees its slot.
func (v *Verifier) verify(s *shard, addr netip.Addr) {
	defer v.wg.Done()
	ok, err := v.Lookup(v.ctx, addr) // a failed lookup is a negative answer
	ttl := v.negTTL
	switch {
	case ok:
		ttl = v.ttl
		v.stats.verified.Add(1)
	case err != nil:
		ttl = v.failedTTL
		v.stats.failed.Add(1)
	}
	v.stats.lookups.Add(1)
	s.mu.Lock()
	s.putLocked(addr, answer{verified: ok, until: v.now() + int64(ttl)})
	delete(s.pending, addr)
	s.mu.Unlock()
	<-v.slots
}

// Lookup checks addr now, waiting on DNS for at most Config.Timeout (or
// until ctx ends): true when one of its PTR names is under a crawler
// domain and resolves forward to addr (of its names under a crawler
// domain, the first 8 are checked). It neither reads nor fills the cache. An address with no PTR name, or
// whose names do not resolve, is false with a nil error; a DNS failure
// or timeout that left it unproven is false with the error.
func (v *Verifier) Lookup(ctx context.Context, addr netip.Addr) (bool, error) {
	addr = addr.Unmap().WithZone("")
	if !lookable(addr) {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, v.timeout)
	defer cancel()
	// LookupAddr leaves out malformed names with an error: check the
	// well-formed ones.
	names, err := v.resolver.LookupAddr(ctx, addr.String())
	if len(names) == 0 {
		if err == nil || notFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("crawler: reverse lookup of %s: %w", addr, err)
	}
	var failed error
	checked := 0
	for _, name := range names {
		if !v.domains.covers(name) {
			continue
		}
		if checked++; checked > maxNames {
			break
		}
		ips, err := v.resolver.LookupNetIP(ctx, "ip", absolute(name))
		if err != nil {
			if !notFound(err) && failed == nil {
				failed = fmt.Errorf("crawler: forward lookup of %s: %w", name, err)
			}
			continue
		}
		for _, ip := range ips {
			if ip.Unmap() == addr {
				return true, nil
			}
		}
	}
	return false, failed
}

// Stats are a Verifier's counts of background lookups since New.
type Stats struct {
	// Lookups ended; of them, Verified found a crawler and Failed ended
	// on a DNS error or timeout (a resolver that never answers shows
	// here: every crawler then answers false).
	Lookups, Verified, Failed uint64
}

type counters struct{ lookups, verified, failed atomic.Uint64 }

// Stats returns the counts of the background lookups (Verified's, not
// Lookup's) so far.
func (v *Verifier) Stats() Stats {
	return Stats{Lookups: v.stats.lookups.Load(), Verified: v.stats.verified.Load(), Failed: v.stats.failed.Load()}
}

// Close stops the lookups under way (their addresses answer false until
// looked up again, which no longer happens) and waits for them to end.
// Verified still answers from the cache. Calling it again does nothing.
func (v *Verifier) Close() {
	v.life.Lock()
	v.closed = true
	v.life.Unlock()
	v.cancel()
	v.wg.Wait()
}

// lookable reports whether addr can be a crawler's: global unicast and
// not private (a proxy's own address, for one, never is).
func lookable(addr netip.Addr) bool {
	return addr.IsGlobalUnicast() && !addr.IsPrivate()
}

// absolute is name with the root's dot: a name looked up as it is, never
// with the resolver's search domains appended.
func absolute(name string) string {
	if len(name) > 0 && name[len(name)-1] == '.' {
		return name
	}
	return name + "."
}

// notFound reports whether err says the name has no such record.
func notFound(err error) bool {
	var de *net.DNSError
	return errors.As(err, &de) && de.IsNotFound
}
