package event

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
	"github.com/anteroom/anteroom/internal/redisrepl"
)

// ErrNotFound is returned for an event that does not exist.
var ErrNotFound = errors.New("event: not found")

// ErrConflict is returned when the stored version moved under a Put.
var ErrConflict = errors.New("event: changed concurrently, retry")

// ErrNotReplicated is returned (wrapped) by a Put that was saved on the
// Redis primary while the replicas it had did not acknowledge the save
// within ReplicaWait: the save stands, and a failover now would lose it.
// Saving the same change again is safe.
var ErrNotReplicated = errors.New("event: saved on the Redis primary, not yet copied by its replicas")

// ReplicaWait bounds how long a save waits for the primary's replicas to
// acknowledge it (Replicated).
const ReplicaWait = time.Second

//go:embed put.lua
var putLua string

//go:embed get.lua
var getLua string

// Store keeps configurations in Redis: one JSON string per event under the
// event's hash tag, and a set of all event ids. It is safe for concurrent
// use.
type Store struct {
	rdb     redis.UniversalClient
	put     *redis.Script
	putPage *redis.Script
	get     *redis.Script
}

// NewStore returns a Store on rdb (a *redis.Client or *redis.ClusterClient).
func NewStore(rdb redis.UniversalClient) *Store {
	return &Store{rdb: rdb, put: luascript.New(putLua), putPage: luascript.New(pagePutLua), get: luascript.New(getLua)}
}

const indexKey = "ar:events"

func configKey(id string) string { return "ar:{" + id + "}:cfg" }

// Get returns the stored configuration of id, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (Config, error) {
	raw, err := s.rdb.Get(ctx, configKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Config{}, ErrNotFound
	}
	if err != nil {
		return Config{}, fmt.Errorf("event %s: %w", id, err)
	}
	return decode(id, raw)
}

// GetAt is Get with the Redis TIME of the read, taken in the same step: a
// node's view of the configuration acts until MaxViewAge after it.
func (s *Store) GetAt(ctx context.Context, id string) (Config, time.Time, error) {
	res, err := s.get.Run(ctx, s.rdb, []string{configKey(id)}).Slice()
	if err != nil {
		return Config{}, time.Time{}, fmt.Errorf("event %s: %w", id, err)
	}
	var ms int64
	ok := len(res) > 0
	if ok {
		ms, ok = res[0].(int64)
	}
	if !ok {
		return Config{}, time.Time{}, fmt.Errorf("event %s: unexpected reply %v", id, res)
	}
	if len(res) < 2 || res[1] == nil {
		return Config{}, time.Time{}, ErrNotFound
	}
	raw, ok := res[1].(string)
	if !ok {
		return Config{}, time.Time{}, fmt.Errorf("event %s: unexpected reply %v", id, res)
	}
	c, err := decode(id, []byte(raw))
	return c, time.UnixMilli(ms), err
}

// decode reads a stored configuration of event id.
func decode(id string, raw []byte) (Config, error) {
	var st stored
	if err := json.Unmarshal(raw, &st); err != nil {
		return Config{}, fmt.Errorf("event %s: decode: %w", id, err)
	}
	c := st.Config
	if st.LimitsSchema < limitsSchema {
		upgradeLimits(&c.Limits)
	}
	// A stored configuration is complete (Put stores defaulted ones); this
	// also gives one written before a field existed that field's default,
	// so readers — the request paths above all — never default again.
	c.Defaults()
	return c, nil
}

// IDs lists every event.
func (s *Store) IDs(ctx context.Context) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, indexKey).Result()
	if err != nil {
		return nil, fmt.Errorf("event ids: %w", err)
	}
	return ids, nil
}

// Put stores c if the stored version still equals c.Version (0 for a new
// event), and returns the stored copy with the version increased. A new
// event gets its seed and seed commitment here. ErrConflict means another
// writer won; read again and retry. An error wrapping ErrNotReplicated
// comes with the saved copy: saved, but not yet safe from a failover.
func (s *Store) Put(ctx context.Context, c Config) (Config, error) {
	saved, _, err := s.PutBefore(ctx, c, time.Time{})
	return saved, err
}

// PutBefore is Put refused, with an error wrapping ErrLocked, when Redis
// TIME has reached lock (see LockAt; the zero time: no lock). The check and
// the save are one step. It also returns Redis TIME at the attempt.
func (s *Store) PutBefore(ctx context.Context, c Config, lock time.Time) (Config, time.Time, error) {
	if c.Seed == "" {
		seed := make([]byte, 32)
		if _, err := rand.Read(seed); err != nil {
			return Config{}, time.Time{}, err
		}
		sum := sha256.Sum256(seed)
		c.Seed, c.SeedCommitment = hex.EncodeToString(seed), hex.EncodeToString(sum[:])
		c.LaneSeeds = true
	}
	expect := c.Version
	c.Version++
	raw, err := json.Marshal(stored{Config: c, LimitsSchema: limitsSchema})
	if err != nil {
		return Config{}, time.Time{}, err
	}
	var lockMs int64
	if !lock.IsZero() {
		lockMs = max(lock.UnixMilli(), 1)
	}
	res, err := s.put.Run(ctx, s.rdb, []string{configKey(c.ID)}, expect, raw, lockMs).Int64Slice()
	if err != nil {
		return Config{}, time.Time{}, fmt.Errorf("event %s: put: %w", c.ID, err)
	}
	if len(res) != 2 {
		return Config{}, time.Time{}, fmt.Errorf("event %s: put: unexpected reply %v", c.ID, res)
	}
	now := time.UnixMilli(res[1])
	switch res[0] {
	case 0:
		return Config{}, now, ErrConflict
	case -1:
		return Config{}, now, fmt.Errorf("%w: the change was refused at %s", ErrLocked, now.UTC().Format(time.RFC3339Nano))
	}
	if err := s.rdb.SAdd(ctx, indexKey, c.ID).Err(); err != nil {
		return Config{}, now, fmt.Errorf("event %s: index: %w", c.ID, err)
	}
	if err := Replicated(ctx, s.rdb); err != nil {
		return c, now, fmt.Errorf("event %s: version %d: %w", c.ID, c.Version, err)
	}
	return c, now, nil
}

// Replicated waits, up to ReplicaWait, until the replicas of every Redis
// master rdb writes to hold every write those masters took before the
// call (internal/redisrepl), and returns an error wrapping
// ErrNotReplicated when one did not: Redis replicates asynchronously,
// and a save its replicas have not copied is lost by a failover (issue
// 34). Every staff save calls it once written, whatever keys and
// masters it wrote (a configuration, its index; a door list's keys). A
// server without replicas, or without ROLE (the embedded default), has
// nothing to wait for. A replica that stopped copying but is still
// connected makes the save ErrNotReplicated; one the primary dropped is
// not waited for — min-replicas-to-write, as deploy/redis sets it,
// refuses writes then.
func Replicated(ctx context.Context, rdb redis.UniversalClient) error {
	err := redisrepl.Wait(ctx, rdb, ReplicaWait)
	if short := (*redisrepl.Shortfall)(nil); errors.As(err, &short) {
		return fmt.Errorf("%w: %v", ErrNotReplicated, short)
	}
	return err
}

// limitsSchema is the revision of the stored limits. Revision 2 keeps
// "default" (join.ip per_second 0, pow.enabled null) apart from "off";
// configurations stored before it (no limits_schema) had both defaults
// written out as off.
const limitsSchema = 2

// stored is a configuration as the store keeps it.
type stored struct {
	Config
	LimitsSchema int `json:"limits_schema,omitempty"`
}

// upgradeLimits reads limits stored before revision 2: a per-IP join
// budget that is off and a proof of work that is off were the old
// defaults, so they become "default" and the event gets today's defaults
// (friction.go). Staff who had turned them off explicitly then could not
// be told apart; they turn them off again.
func upgradeLimits(l *Limits) {
	if l.Join.IP == Off {
		l.Join.IP = Rate{}
	}
	if l.PoW.Enabled == SwitchOff {
		l.PoW.Enabled = SwitchDefault
	}
}
