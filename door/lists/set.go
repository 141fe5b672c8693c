package lists

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/FastFilter/xorfilter"
	"github.com/anteroom/anteroom/door"
	"github.com/redis/go-redis/v9"
)

// Set is a node's view of every list (door.Lists): for a list of ids, a
// binary fuse filter of its entries' keyed hashes (16-bit fingerprints,
// about 2.25 bytes an entry, a false positive about once in 65,536:
// Absent is certain, Maybe is asked of the exact copy at the join or
// refuses elsewhere); for a network list, a sorted table of address
// ranges (exact). A list Redis names that the view does not hold (its
// build failed or is running) answers Unknown, and so does every list
// before a Refresh read the versions: never Absent (package door's walk
// of checks). Reads are lock-free: they load an immutable snapshot,
// which Refresh replaces when a list's Version changes. Safe for
// concurrent use.
type Set struct {
	store *Store
	snap  atomic.Pointer[snapshot]

	mu       sync.Mutex // guards the fields below and the snapshot's replacement
	loaded   bool       // a first Refresh built every list
	building map[string]bool
	lastErr  error // a background build's, returned by the next Refresh
	ready    atomic.Bool

	beforeBuild func(name string) // tests: runs before a background build reads list name
}

// snapshot is the immutable view the checks read.
type snapshot struct {
	lists map[string]*listView
	// read: a Refresh has read the lists' versions; before, every list
	// is Unknown.
	read bool
	// kinds are the lists Redis held at the latest read: one of them
	// missing from lists is Unknown (its build failed or is running).
	kinds map[string]Kind
}

// listView is one list as the node holds it.
type listView struct {
	kind    Kind
	version int64
	count   int64
	filter  *xorfilter.BinaryFuse[uint16] // nil: no entries (or a network list)
	nets    *netTable                     // network lists
}

var _ door.Lists = (*Set)(nil)

// NewSet returns an empty view over store; Refresh fills it.
func NewSet(store *Store) *Set {
	s := &Set{store: store, building: map[string]bool{}}
	s.snap.Store(&snapshot{lists: map[string]*listView{}})
	return s
}

// Ready reports whether the view has held every list at once: a Refresh
// read the versions and every list they named was built. It stays true
// afterwards (a list created later is Unknown while it builds, on every
// node at once: readiness would take them all out). A node is not ready
// before (its /readyz).
func (s *Set) Ready() bool { return s.ready.Load() }

// markReady sets Ready when the view holds every list of the latest
// read. The caller holds s.mu.
func (s *Set) markReady() {
	snap := s.snap.Load()
	if s.ready.Load() || !snap.read {
		return
	}
	for name := range snap.kinds {
		if snap.lists[name] == nil {
			return
		}
	}
	s.ready.Store(true)
}

// Refresh reads every list's Version (one round trip) and rebuilds the
// view of each list that changed: in the caller on the first call, so a
// node starts with every list; in the background afterwards (a build
// takes seconds at 10 million entries), the previous view answering
// meanwhile. Cheap when nothing changed: the node calls it every tick.
// It returns the round trip's error or the last background build's.
func (s *Set) Refresh(ctx context.Context) error {
	if err := s.store.Init(ctx); err != nil {
		return err
	}
	// One round trip: the versions and the hash key, pipelined.
	pipe := s.store.rdb.Pipeline()
	allCmd := pipe.HGetAll(ctx, metaKey)
	keyCmd := pipe.Get(ctx, hashKeyKey)
	_, _ = pipe.Exec(ctx) // errors are per command, below
	all, err := allCmd.Result()
	if err != nil {
		return fmt.Errorf("lists: refresh: %w", err)
	}
	got, kerr := keyCmd.Result()
	if kerr != nil && !errors.Is(kerr, redis.Nil) {
		return fmt.Errorf("lists: refresh: %w", kerr)
	}
	keyErr := s.store.checkKey(ctx, got)
	metas := make(map[string]Meta, len(all))
	for name, raw := range all {
		m, err := decodeMeta(name, raw)
		if err != nil {
			return err
		}
		metas[name] = m
	}
	kinds := make(map[string]Kind, len(metas))
	for name, m := range metas {
		kinds[name] = m.Kind
	}
	s.mu.Lock()
	cur := s.snap.Load().lists
	gone := false
	for name := range cur {
		if _, ok := metas[name]; !ok {
			gone = true
		}
	}
	if gone {
		cur = maps.Clone(cur)
		maps.DeleteFunc(cur, func(name string, _ *listView) bool { _, ok := metas[name]; return !ok })
	}
	s.snap.Store(&snapshot{lists: cur, read: true, kinds: kinds})
	s.markReady()
	var stale []Meta
	for name, m := range metas {
		if v := cur[name]; (v == nil || v.version != m.Version) && !s.building[name] {
			stale = append(stale, m)
			s.building[name] = true
		}
	}
	first := !s.loaded
	s.loaded = true
	err, s.lastErr = s.lastErr, nil
	s.mu.Unlock()
	if first {
		var errs []error
		for _, m := range stale {
			errs = append(errs, s.build(ctx, m))
		}
		return errors.Join(append(errs, err, keyErr)...)
	}
	for _, m := range stale {
		go func() {
			if s.beforeBuild != nil {
				s.beforeBuild(m.Name)
			}
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
			defer cancel()
			if err := s.build(bctx, m); err != nil {
				s.mu.Lock()
				s.lastErr = err
				s.mu.Unlock()
			}
		}()
	}
	return errors.Join(err, keyErr)
}

// build reads list m's entries, builds its view and publishes it; when
// it fails, it drops the view of an older Version.
func (s *Set) build(ctx context.Context, m Meta) error {
	v, err := s.view(ctx, m)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.building, m.Name)
	cur := s.snap.Load()
	if err != nil {
		// A view of an older Version would answer for entries it lacks
		// until a build succeeds, however long: drop it (the list is
		// Unknown until then).
		if old := cur.lists[m.Name]; old != nil && old.version < m.Version {
			next := maps.Clone(cur.lists)
			delete(next, m.Name)
			s.snap.Store(&snapshot{lists: next, read: cur.read, kinds: cur.kinds})
		}
		return err
	}
	next := maps.Clone(cur.lists)
	next[m.Name] = v
	s.snap.Store(&snapshot{lists: next, read: cur.read, kinds: cur.kinds})
	s.markReady()
	return nil
}

// view builds list m's view from its canonical entries.
func (s *Set) view(ctx context.Context, m Meta) (*listView, error) {
	v := &listView{kind: m.Kind, version: m.Version}
	size := recordSize(m.Kind)
	if !m.Kind.ids() {
		var ps []netip.Prefix
		err := s.store.eachBucket(ctx, m.Name, size, func(_ int, b []byte) error {
			for i := 0; i+size <= len(b); i += size {
				ps = append(ps, netOfRecord(b[i:i+size]))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		v.count, v.nets = int64(len(ps)), newNetTable(ps)
		return v, nil
	}
	keys := make([]uint64, 0, m.Count)
	err := s.store.eachBucket(ctx, m.Name, size, func(_ int, b []byte) error {
		for i := 0; i+size <= len(b); i += size {
			keys = append(keys, binary.BigEndian.Uint64(b[i:]))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	v.count = int64(len(keys))
	if len(keys) > 0 {
		f, err := xorfilter.NewBinaryFuse[uint16](keys)
		if err != nil {
			return nil, fmt.Errorf("lists: filter of %s: %w", m.Name, err)
		}
		v.filter = f
	}
	return v, nil
}

// User answers whether user is on list name: Maybe when the list's filter
// holds user's keyed hash, Absent otherwise (certainly not on it), and
// Absent for a list of networks or one that does not exist. It answers
// Unknown for a list of ids the view does not hold (its build failed or
// is running), and for every list before a Refresh read the versions.
func (s *Set) User(list, user string) door.Membership {
	snap := s.snap.Load()
	v := snap.lists[list]
	if v == nil {
		return snap.unheld(list, true)
	}
	if v.filter == nil {
		return door.Absent
	}
	if v.filter.Contains(s.store.Hash(user)) {
		return door.Maybe
	}
	return door.Absent
}

// Addr answers whether addr is in one of network list name's networks:
// Present or Absent, exactly; Absent for a list of ids or one that does
// not exist. It answers Unknown for a list of networks the view does not
// hold, and for every list before a Refresh read the versions.
func (s *Set) Addr(list string, addr netip.Addr) door.Membership {
	snap := s.snap.Load()
	v := snap.lists[list]
	if v == nil {
		return snap.unheld(list, false)
	}
	if v.nets == nil {
		return door.Absent
	}
	if v.nets.has(addr) {
		return door.Present
	}
	return door.Absent
}

// unheld answers for list, which the view does not hold, asked as a
// list of ids (ids) or of networks: Unknown before the versions were
// read or when Redis holds a list of that kind by that name, else
// Absent (no such list, or one of the other kind).
func (snap *snapshot) unheld(list string, ids bool) door.Membership {
	if !snap.read {
		return door.Unknown
	}
	if k, ok := snap.kinds[list]; ok && k.ids() == ids {
		return door.Unknown
	}
	return door.Absent
}

// Hash is user's keyed hash (Store.Hash).
func (s *Set) Hash(user string) uint64 { return s.store.Hash(user) }

// Version is the Version of list name the node's view holds, and whether
// it holds the list.
func (s *Set) Version(list string) (int64, bool) {
	v := s.snap.Load().lists[list]
	if v == nil {
		return 0, false
	}
	return v.version, true
}

// bytes is the memory of list's view (its filter or table), for the
// benchmarks.
func (s *Set) bytes(list string) int {
	v := s.snap.Load().lists[list]
	switch {
	case v == nil:
		return 0
	case v.filter != nil:
		return 2*cap(v.filter.Fingerprints) + 32
	case v.nets != nil:
		return v.nets.bytes()
	}
	return 0
}

// Holds reports whether the node's view holds every list of names (a
// view of some Version of each).
func (s *Set) Holds(names ...string) bool {
	lists := s.snap.Load().lists
	for _, name := range names {
		if lists[name] == nil {
			return false
		}
	}
	return true
}
