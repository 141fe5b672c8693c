package lists

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/redis/go-redis/v9"
)

// The store's keys outside any list's slot. metaKey is the versions hash
// every node polls (Set.Refresh): field = list name, value = the list's
// Meta as JSON.
const (
	hashKeyKey = "ar:lists:hashkey" // the deployment's 16-byte SipHash key
	metaKey    = "ar:lists:meta"    // list name -> Meta JSON
	clockKey   = "ar:lists:clock"   // INCR: every change's Version
	salesKey   = "ar:lists:sales"   // sale id -> saleRefs JSON
	copiedKey  = "ar:lists:copied"  // "<sale>\x00<list>" -> Version its copies hold
)

// listKey is the key of list name's canonical entries (one slot per
// list: the hash tag is the name); lockKey serialises changes to it.
func listKey(name string) string { return "ar:list:{" + name + "}:e" }
func lockKey(name string) string { return "ar:list:{" + name + "}:lock" }

// MaxEntries is the default and largest Max of a list: Load refuses an
// upload, and Add a value, that would make a list longer.
const MaxEntries = 10_000_000

// Meta describes a list.
type Meta struct {
	// Name is the list's name (event.ValidListName).
	Name string `json:"name"`
	// Kind is what the list holds.
	Kind Kind `json:"kind"`
	// Count is how many entries it holds.
	Count int64 `json:"count"`
	// Version changes (increases) with every change of the list; nodes
	// rebuild their filter of the list when it does.
	Version int64 `json:"version"`
	// UpdatedAt is the last change's Redis TIME.
	UpdatedAt time.Time `json:"updated_at"`
}

// Store keeps the lists in Redis (a single server or a Cluster): their
// canonical entries, their metadata, and the exact copies of the sales
// that reference them (Sync). Safe for concurrent use; changes to one
// list are serialised across nodes by a lock in Redis.
type Store struct {
	rdb redis.UniversalClient
	key atomic.Pointer[[2]uint64]
}

// NewStore returns a Store over rdb. The deployment's hash key is read
// (or created) by the first call taking a context, or by Init.
func NewStore(rdb redis.UniversalClient) *Store { return &Store{rdb: rdb} }

// Init reads the deployment's hash key, creating it when no node has yet:
// 16 random bytes SET NX at ar:lists:hashkey, never changed afterwards
// (another key would orphan every list's entries). A node calls it at
// start, before anything calls Hash. When the key is missing while lists
// exist (Redis lost it, or a cluster lost its slot), Init refuses rather
// than make a new one: a node still running puts its key back within a
// tick (Set.Refresh), else the key must be restored from a backup or
// every list of ids loaded again.
func (s *Store) Init(ctx context.Context) error {
	if s.key.Load() != nil {
		return nil
	}
	raw, err := s.rdb.Get(ctx, hashKeyKey).Result()
	if errors.Is(err, redis.Nil) {
		n, lerr := s.rdb.HLen(ctx, metaKey).Result()
		if lerr != nil {
			return fmt.Errorf("lists: hash key: %w", lerr)
		}
		if n > 0 {
			return fmt.Errorf("lists: the hash key %s is missing while %d lists exist: restore it from a backup (a running node puts its own back), or delete and load again every list of ids", hashKeyKey, n)
		}
		var fresh [16]byte
		if _, err := rand.Read(fresh[:]); err != nil {
			return err
		}
		if serr := s.rdb.SetNX(ctx, hashKeyKey, string(fresh[:]), 0).Err(); serr != nil {
			return fmt.Errorf("lists: hash key: %w", serr)
		}
		raw, err = s.rdb.Get(ctx, hashKeyKey).Result()
	}
	if err != nil {
		return fmt.Errorf("lists: hash key: %w", err)
	}
	if len(raw) != 16 {
		return fmt.Errorf("lists: hash key at %s is %d bytes, not 16", hashKeyKey, len(raw))
	}
	k := [2]uint64{binary.LittleEndian.Uint64([]byte(raw[:8])), binary.LittleEndian.Uint64([]byte(raw[8:]))}
	s.key.CompareAndSwap(nil, &k)
	return nil
}

// rawKey is the key in force as Redis stores it.
func (s *Store) rawKey() string {
	k := s.key.Load()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], k[0])
	binary.LittleEndian.PutUint64(b[8:], k[1])
	return string(b[:])
}

// checkKey compares the key Redis holds (got, "" when missing) with the
// one in force: a missing key is put back; another key is an error (the
// node keeps hashing with its own).
func (s *Store) checkKey(ctx context.Context, got string) error {
	want := s.rawKey()
	switch got {
	case want:
		return nil
	case "":
		if err := s.rdb.SetNX(ctx, hashKeyKey, want, 0).Err(); err != nil {
			return fmt.Errorf("lists: put the hash key back: %w", err)
		}
		return fmt.Errorf("lists: the hash key %s was missing; this node put its own back", hashKeyKey)
	}
	return fmt.Errorf("lists: the hash key %s differs from the one this node started with: lists of ids do not match their ids; restart the nodes once the right key is back", hashKeyKey)
}

// Hash is value's keyed hash (SipHash-2-4 under the deployment's key):
// the entry a list of ids keeps for it, and list_has's argument (Arg).
// It panics when the key was never read (Init): a wiring error, since a
// hash under another key would let a listed caller in.
func (s *Store) Hash(value string) uint64 {
	k := s.key.Load()
	if k == nil {
		panic("lists: Hash before Store.Init read the deployment's hash key")
	}
	return sipHash(k[0], k[1], value)
}

// Create makes an empty list. ErrInvalid for a bad name or kind,
// ErrExists when the name is taken; event.ErrNotReplicated (wrapped),
// with the Meta, when the Redis replicas did not copy the new list
// within event.ReplicaWait (it stands on the primary). ErrExists too
// comes once the replicas hold the list, so a create sent again after
// ErrNotReplicated answers ErrExists only once the first one is safe.
func (s *Store) Create(ctx context.Context, name string, kind Kind) (Meta, error) {
	if !event.ValidListName(name) {
		return Meta{}, invalid("list name %q: lowercase letters, digits, '_' and '-', at most 64, optionally after \"<event id>.\"", name)
	}
	if !kind.Valid() {
		return Meta{}, invalid("kind %q must be one of %q", kind, Kinds)
	}
	if err := s.Init(ctx); err != nil {
		return Meta{}, err
	}
	m := Meta{Name: name, Kind: kind}
	if err := s.stamp(ctx, &m); err != nil {
		return Meta{}, err
	}
	b, _ := json.Marshal(m)
	ok, err := s.rdb.HSetNX(ctx, metaKey, name, b).Result()
	if err != nil {
		return Meta{}, fmt.Errorf("lists: create %s: %w", name, err)
	}
	if !ok {
		if err := s.confirmed(ctx, nil); err != nil {
			return Meta{}, err
		}
		return Meta{}, fmt.Errorf("%w: %q", ErrExists, name)
	}
	return m, s.confirmed(ctx, nil)
}

// confirmed is the outcome of a change that ended with err: err itself
// when the change failed, else once the Redis replicas hold every write
// it made (event.Replicated, on every master it may have written to)
// nil, or an error wrapping event.ErrNotReplicated when they did not
// copy it within event.ReplicaWait: the change stands on the primary,
// and a failover now would lose it. Changes call it after their lock is
// released.
func (s *Store) confirmed(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	return event.Replicated(ctx, s.rdb)
}

// stamp gives m a fresh Version and the Redis TIME.
func (s *Store) stamp(ctx context.Context, m *Meta) error {
	v, err := s.rdb.Incr(ctx, clockKey).Result()
	if err != nil {
		return fmt.Errorf("lists: version: %w", err)
	}
	now, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return fmt.Errorf("lists: time: %w", err)
	}
	m.Version, m.UpdatedAt = v, now.UTC()
	return nil
}

// Get returns list name's Meta; ErrNoList when there is none.
func (s *Store) Get(ctx context.Context, name string) (Meta, error) {
	raw, err := s.rdb.HGet(ctx, metaKey, name).Result()
	if errors.Is(err, redis.Nil) {
		return Meta{}, fmt.Errorf("%w: %q", ErrNoList, name)
	}
	if err != nil {
		return Meta{}, fmt.Errorf("lists: get %s: %w", name, err)
	}
	return decodeMeta(name, raw)
}

func decodeMeta(name, raw string) (Meta, error) {
	var m Meta
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return Meta{}, fmt.Errorf("lists: meta of %s: %w", name, err)
	}
	m.Name = name
	return m, nil
}

// List returns every list's Meta, by name.
func (s *Store) List(ctx context.Context) ([]Meta, error) {
	all, err := s.rdb.HGetAll(ctx, metaKey).Result()
	if err != nil {
		return nil, fmt.Errorf("lists: list: %w", err)
	}
	out := make([]Meta, 0, len(all))
	for name, raw := range all {
		m, err := decodeMeta(name, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Meta) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out, nil
}

// putMeta stores m (under m.Name's lock).
func (s *Store) putMeta(ctx context.Context, m Meta) error {
	b, _ := json.Marshal(m)
	if err := s.rdb.HSet(ctx, metaKey, m.Name, b).Err(); err != nil {
		return fmt.Errorf("lists: meta of %s: %w", m.Name, err)
	}
	return nil
}

// Delete removes list name and its entries. ErrInUse while a sale's door
// references it (Sync), ErrNoList when there is none; event.ErrNotReplicated
// (wrapped) when the Redis replicas did not copy the deletion within
// event.ReplicaWait (the list is gone on the primary).
func (s *Store) Delete(ctx context.Context, name string) error {
	return s.confirmed(ctx, s.delete(ctx, name))
}

// delete is Delete before the replicas are waited for.
func (s *Store) delete(ctx context.Context, name string) error {
	unlock, err := s.lock(ctx, name)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := s.Get(ctx, name); err != nil {
		return err
	}
	users, err := s.salesOf(ctx, name)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		return fmt.Errorf("%w: %q is referenced by sale %s", ErrInUse, name, strconv.Quote(users[0].ev))
	}
	if err := s.rdb.Del(ctx, listKey(name)).Err(); err != nil {
		return fmt.Errorf("lists: delete %s: %w", name, err)
	}
	if err := s.rdb.HDel(ctx, metaKey, name).Err(); err != nil {
		return fmt.Errorf("lists: delete %s: %w", name, err)
	}
	return nil
}

// lockTTL bounds how long a crashed holder keeps a list locked.
const lockTTL = 5 * time.Minute

var unlockScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

// lock takes list name's change lock, waiting (until ctx ends) while
// another change holds it.
func (s *Store) lock(ctx context.Context, name string) (unlock func(), err error) {
	if err := s.Init(ctx); err != nil {
		return nil, err
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	token := string(tok[:])
	for {
		ok, err := s.rdb.SetNX(ctx, lockKey(name), token, lockTTL).Result()
		if err != nil {
			return nil, fmt.Errorf("lists: lock %s: %w", name, err)
		}
		if ok {
			return func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				_ = unlockScript.Run(ctx, s.rdb, []string{lockKey(name)}, token).Err()
			}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lists: lock %s: %w", name, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
