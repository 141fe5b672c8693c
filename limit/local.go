package limit

import (
	"hash/maphash"
	"math"
	"sync"
	"time"
)

// Local is a set of in-memory token buckets, one per key, with the same
// arithmetic as bucket.lua. The Limiter uses it when Redis is slow or down;
// the edge uses it on its own for limits that must never cost a Redis
// round trip (status polls).
//
// Memory is bounded: a bucket that has refilled is worth nothing, so it is
// dropped when room is needed, which changes no decision. Only when more
// than the bound of keys are all partly spent at once (a flood of distinct
// keys) are some of them dropped early, which forgives those callers.
//
// A Local is safe for concurrent use. Time is passed in, so tests step
// through instants. The zero value is not usable: use NewLocal.
type Local struct {
	seed     maphash.Seed
	perShard int
	shards   [localShards]localShard
}

const localShards = 32

type localShard struct {
	mu sync.Mutex
	m  map[string]*Bucket
}

// NewLocal returns an empty set that keeps at most about maxKeys buckets.
//
// Default: 100,000 keys when maxKeys < 1.
func NewLocal(maxKeys int) *Local {
	if maxKeys < 1 {
		maxKeys = 100_000
	}
	l := &Local{seed: maphash.MakeSeed(), perShard: max(1, maxKeys/localShards)}
	for i := range l.shards {
		l.shards[i].m = make(map[string]*Bucket)
	}
	return l
}

// Take spends one token of key's bucket, shaped l, at now. It returns
// whether the token was there, the tokens left, and, when refused, how long
// until one is. An unlimited l always allows.
func (l *Local) Take(key string, lim Limit, now time.Time) (ok bool, left float64, retry time.Duration) {
	if lim.Unlimited() {
		return true, math.Inf(1), 0
	}
	sh := &l.shards[maphash.String(l.seed, key)%localShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.m[key]
	if b == nil {
		b = sh.add(key, lim, now, l.perShard)
	}
	return b.take(lim, now)
}

// TakeBytes is Take for a key in a buffer the caller reuses: a request
// path builds its key without allocating, and the key is copied only when
// its bucket is new.
func (l *Local) TakeBytes(key []byte, lim Limit, now time.Time) (ok bool, left float64, retry time.Duration) {
	if lim.Unlimited() {
		return true, math.Inf(1), 0
	}
	sh := &l.shards[maphash.Bytes(l.seed, key)%localShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.m[string(key)] // no copy for a lookup
	if b == nil {
		b = sh.add(string(key), lim, now, l.perShard)
	}
	return b.take(lim, now)
}

// add makes key's bucket, full, evicting first when the shard holds
// perShard buckets. The caller holds sh.mu.
func (sh *localShard) add(key string, lim Limit, now time.Time, perShard int) *Bucket {
	if len(sh.m) >= perShard {
		sh.evict(now, perShard)
	}
	b := &Bucket{tokens: lim.burst(), last: now}
	sh.m[key] = b
	return b
}

// Len returns the number of buckets held.
func (l *Local) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// evict makes room in a full shard: first every bucket that has refilled
// (lossless), then, if that is not enough, a quarter of the shard chosen by
// map order.
func (sh *localShard) evict(now time.Time, bound int) {
	for k, b := range sh.m {
		if b.Full(now) {
			delete(sh.m, k)
		}
	}
	for k := range sh.m {
		if len(sh.m) < bound*3/4 {
			break
		}
		delete(sh.m, k)
	}
}

// BucketBytes returns a copy of key's bucket, if there is one: a caller
// that takes over a key's budget (see Bucket) starts from it.
func (l *Local) BucketBytes(key []byte) (Bucket, bool) {
	sh := &l.shards[maphash.Bytes(l.seed, key)%localShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.m[string(key)]
	if b == nil {
		return Bucket{}, false
	}
	return *b, true
}
