package crawler

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/internal/wait"
)

func TestOneLookupPerAddress(t *testing.T) {
	s := testenv.StartDNS(t)
	s.SetPTR(googleV4, googleV4PT)
	s.SetAddrs(googleV4PT, googleV4)
	s.Hold()
	v, _ := newVerifier(t, s, Config{Timeout: 30 * time.Second})
	a := netip.MustParseAddr(googleV4)

	var wg sync.WaitGroup
	var trues atomic.Int64
	for range 64 {
		wg.Go(func() {
			for range 100 {
				if v.Verified(a) {
					trues.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if trues.Load() != 0 {
		t.Errorf("%d calls answered true during the lookup, want false", trues.Load())
	}
	if n := len(v.slots); n != 1 {
		t.Errorf("lookups under way after 6400 calls from one address = %d, want 1", n)
	}
	s.Release()
	waitVerified(t, v, googleV4)
	if got := s.Queries("PTR", googleV4); got != 1 {
		t.Errorf("PTR queries = %d, want exactly 1", got)
	}
}

func TestLookupBound(t *testing.T) {
	s := testenv.StartDNS(t)
	s.Hold()
	const bound = 3
	v, _ := newVerifier(t, s, Config{MaxLookups: bound, Timeout: 30 * time.Second})
	addrs := make([]netip.Addr, 20)
	for i := range addrs {
		addrs[i] = netip.MustParseAddr(fmt.Sprintf("203.0.113.%d", 100+i))
		s.SetPTR(addrs[i].String(), fmt.Sprintf("host-%d.example.net", i))
		if v.Verified(addrs[i]) {
			t.Fatalf("Verified(%s) = true", addrs[i])
		}
	}
	if err := wait.Until(10*time.Second, 2*time.Millisecond, func() error {
		if n := s.Held(); n < bound {
			return fmt.Errorf("%d PTR queries held, want %d", n, bound)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Every slot is taken: more calls start nothing (give a wrong
	// extra lookup a moment to show).
	for _, a := range addrs {
		v.Verified(a)
	}
	wait.Sleep(context.Background(), 100*time.Millisecond)
	if got, n := s.TotalQueries("PTR"), len(v.slots); got != bound || n != bound {
		t.Errorf("PTR queries = %d, lookups under way = %d; want %d and %d", got, n, bound, bound)
	}
	s.Release()
	waitIdle(t, v)
	// The others are looked up at later calls, never more at once.
	for len(addrs) > 0 {
		rest := addrs[:0]
		for _, a := range addrs {
			if _, ok := v.cache.shard(a).get(a); !ok {
				v.Verified(a)
				rest = append(rest, a)
			}
		}
		addrs = rest
		waitIdle(t, v)
	}
	if got := s.TotalQueries("PTR"); got != 20 {
		t.Errorf("PTR queries = %d, want 20, one per address", got)
	}
	if most := s.MostHeld(); most > bound {
		t.Errorf("at most %d PTR queries at once, want ≤ %d", most, bound)
	}
}

func TestCacheBound(t *testing.T) {
	s := testenv.StartDNS(t)
	const max = 64
	v, _ := newVerifier(t, s, Config{MaxAddrs: max, MaxLookups: 16})
	for i := range 600 {
		a := netip.AddrFrom4([4]byte{203, 0, byte(113 + i/250), byte(1 + i%250)})
		v.Verified(a)
		if i%16 == 15 {
			waitIdle(t, v)
		}
		if n := v.cache.len(); n > max {
			t.Fatalf("after %d addresses the cache holds %d, want ≤ %d", i+1, n, max)
		}
	}
	waitIdle(t, v)
	if n := v.cache.len(); n > max || n < max/2 {
		t.Errorf("cache holds %d addresses, want ≤ %d and filled", n, max)
	}
}

func TestCacheEvictsOldest(t *testing.T) {
	c := newCache(4)
	addrs := []netip.Addr{}
	for i := range 40 {
		a := netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
		addrs = append(addrs, a)
		s := c.shard(a)
		s.mu.Lock()
		s.putLocked(a, answer{verified: true, until: 1})
		s.putLocked(a, answer{verified: true, until: 2}) // an update is no new address
		s.mu.Unlock()
		if n := c.len(); n > 4 {
			t.Fatalf("after %d addresses the cache holds %d, want ≤ 4", i+1, n)
		}
		if got, ok := s.get(a); !ok || got.until != 2 {
			t.Fatalf("the address just stored reads %v, %v; want its latest answer", got, ok)
		}
	}
	// The first address was evicted before the last.
	if _, ok := c.shard(addrs[0]).get(addrs[0]); ok {
		t.Error("the oldest address is still cached after 39 newer ones")
	}
}

func TestClose(t *testing.T) {
	s := testenv.StartDNS(t)
	s.Hold()
	v, _ := newVerifier(t, s, Config{Timeout: time.Minute})
	v.Verified(netip.MustParseAddr(googleV4))
	if len(v.slots) != 1 {
		t.Fatal("no lookup started")
	}
	done := make(chan struct{})
	go func() { v.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second): // not the resolver's 5 s attempt: Close cuts the read short
		t.Fatal("Close did not stop a lookup held by the DNS server within 3s")
	}
	v.Verified(netip.MustParseAddr("66.249.66.30"))
	if n := len(v.slots); n != 0 {
		t.Errorf("a lookup started after Close (%d under way)", n)
	}
	v.Close() // again: nothing
}

func TestVerifiedHitAllocatesNothing(t *testing.T) {
	s := testenv.StartDNS(t)
	s.SetPTR(googleV4, googleV4PT)
	s.SetAddrs(googleV4PT, googleV4)
	v, _ := newVerifier(t, s, Config{})
	waitVerified(t, v, googleV4)
	a := netip.MustParseAddr(googleV4)
	if n := testing.AllocsPerRun(1000, func() { v.Verified(a) }); n != 0 {
		t.Errorf("Verified on a cache hit allocates %v times, want 0", n)
	}
	b := netip.MustParseAddr(googleV6)
	v.cache.shard(b).putLocked(b, answer{until: v.now() + int64(time.Hour)})
	if n := testing.AllocsPerRun(1000, func() { v.Verified(b) }); n != 0 {
		t.Errorf("Verified on an IPv6 cache hit allocates %v times, want 0", n)
	}
}
