package crawler

import (
	"hash/maphash"
	"net/netip"
	"sync"
)

// answer is what the cache holds of one address: verified or not, until
// an instant (Verifier.now).
type answer struct {
	verified bool
	until    int64
}

// cache holds the answers of at most max addresses, over shards each
// behind its own lock, each evicting its oldest address (the first
// stored) to store a new one. Reads take a shard's read lock and allocate
// nothing. The shard of an address is a keyed hash, its seed random per
// cache: a caller cannot aim at one shard to evict a crawler's answer.
type cache struct {
	seed   maphash.Seed
	shards []shard
}

// shard is one part of the cache: its answers and, for eviction, their
// addresses in the order first stored (a ring: next is the oldest once
// the shard is full).
type shard struct {
	mu      sync.RWMutex
	answers map[netip.Addr]answer
	order   []netip.Addr
	next    int
	max     int
	// pending are the addresses being looked up now, whose lookups
	// belong to this shard: one lookup per address at a time.
	pending map[netip.Addr]struct{}
}

// maxShards bounds the cache's shards: enough that readers on a few
// cores seldom share a lock.
const maxShards = 32

// newCache returns a cache of at most max (≥ 1) addresses.
func newCache(max int) *cache {
	n := min(maxShards, max)
	c := &cache{seed: maphash.MakeSeed(), shards: make([]shard, n)}
	for i := range c.shards {
		c.shards[i] = shard{answers: make(map[netip.Addr]answer), max: max / n, pending: make(map[netip.Addr]struct{})}
	}
	return c
}

// shard returns addr's shard.
func (c *cache) shard(addr netip.Addr) *shard {
	b := addr.As16()
	return &c.shards[maphash.Bytes(c.seed, b[:])%uint64(len(c.shards))]
}

// get returns addr's answer, if it holds one.
func (s *shard) get(addr netip.Addr) (answer, bool) {
	s.mu.RLock()
	a, ok := s.answers[addr]
	s.mu.RUnlock()
	return a, ok
}

// putLocked stores addr's answer, evicting the shard's oldest address if
// addr is new and the shard full. The caller holds s.mu.
func (s *shard) putLocked(addr netip.Addr, a answer) {
	if _, ok := s.answers[addr]; !ok {
		if len(s.order) < s.max {
			s.order = append(s.order, addr)
		} else {
			delete(s.answers, s.order[s.next])
			s.order[s.next] = addr
			s.next = (s.next + 1) % s.max
		}
	}
	s.answers[addr] = a
}

// len is how many addresses the cache holds.
func (c *cache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.answers)
		s.mu.RUnlock()
	}
	return n
}
