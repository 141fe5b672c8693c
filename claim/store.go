package claim

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Outcomes callers branch on.
var (
	ErrSoldOut      = errors.New("claim: sold out")
	ErrLimitReached = errors.New("claim: per-user limit reached")
	ErrNotFound     = errors.New("claim: no such claim")
	ErrUnavailable  = errors.New("claim: order stream unavailable")
)

// LimitError is returned with ErrLimitReached; it carries the claim ids the
// user already holds.
type LimitError struct{ Held []string }

func (e *LimitError) Error() string { return ErrLimitReached.Error() }

// Unwrap makes errors.Is(err, ErrLimitReached) true.
func (e *LimitError) Unwrap() error { return ErrLimitReached }

//go:embed claim.lua
var claimLua string

// Store runs the claim script and reads claim state. It is safe for
// concurrent use.
type Store struct {
	rdb   redis.UniversalClient
	claim *redis.Script
}

// NewStore returns a Store on rdb (a *redis.Client or *redis.ClusterClient).
func NewStore(rdb redis.UniversalClient) *Store {
	return &Store{rdb: rdb, claim: redis.NewScript(claimLua)}
}

// Lay sets the stock of event ev: units spread evenly over buckets. It
// overwrites, so callers use it only before the sale starts.
func (s *Store) Lay(ctx context.Context, ev string, units int64, buckets int) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range buckets {
			n := units / int64(buckets)
			if int64(b) < units%int64(buckets) {
				n++
			}
			p.Set(ctx, bucketOf(ev, b).stock(), n, 0)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("lay stock %s: %w", ev, err)
	}
	return nil
}

// request is one claim attempt as the script sees it.
type request struct {
	Event, User, IdemKey string
	Pos, Limit           int64
	Bucket               int
	IdemTTL              time.Duration
	Now                  time.Time
}

// OrderEvent is the message published to JetStream for every state change
// of a claim.
type OrderEvent struct {
	Type    string    `json:"type"` // granted | released
	Event   string    `json:"event"`
	ClaimID string    `json:"claim_id"`
	User    string    `json:"user"`
	Pos     int64     `json:"pos"`
	Units   int64     `json:"units"`
	At      time.Time `json:"at"`
}

// scriptResult is the decoded reply of claim.lua.
type scriptResult struct {
	ClaimID string
	Left    int64
	Status  string
	Payload string // order event still in the outbox, or ""
	Replay  bool
}

func (s *Store) run(ctx context.Context, r request) (scriptResult, error) {
	id, err := newClaimID(r.Bucket)
	if err != nil {
		return scriptResult{}, err
	}
	payload, err := json.Marshal(OrderEvent{Type: "granted", Event: r.Event, ClaimID: id, User: r.User, Pos: r.Pos, Units: 1, At: r.Now.UTC()})
	if err != nil {
		return scriptResult{}, err
	}
	k := bucketOf(r.Event, r.Bucket)
	keys := []string{k.stock(), k.userClaims(r.User), k.idem(r.User, r.IdemKey), k.records(), k.outbox(), k.stats()}
	res, err := s.claim.Run(ctx, s.rdb, keys, r.User, r.Limit, id, payload, int64(r.IdemTTL/time.Second), r.Pos, r.Now.UnixMilli()).Slice()
	if err != nil {
		return scriptResult{}, fmt.Errorf("claim %s: %w", r.Event, err)
	}
	if len(res) != 5 {
		return scriptResult{}, fmt.Errorf("claim %s: unexpected reply %v", r.Event, res)
	}
	code, _ := res[0].(int64)
	cid, _ := res[1].(string)
	left, _ := res[2].(int64)
	status, _ := res[3].(string)
	pl, _ := res[4].(string)
	switch code {
	case 0, 1:
		return scriptResult{ClaimID: cid, Left: left, Status: status, Payload: pl, Replay: code == 1}, nil
	case 2:
		return scriptResult{}, &LimitError{Held: strings.Split(cid, ",")}
	case 3:
		return scriptResult{}, ErrSoldOut
	}
	return scriptResult{}, fmt.Errorf("claim %s: unknown reply code %d", r.Event, code)
}

var claimIDPattern = regexp.MustCompile(`^([0-9]{1,4})-([0-9a-f]{24})$`)

func newClaimID(bucket int) (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return strconv.Itoa(bucket) + "-" + hex.EncodeToString(b[:]), nil
}

// ParseClaimID returns the bucket a claim id names, or ErrNotFound for a
// string that cannot be a claim id.
func ParseClaimID(id string) (int, error) {
	m := claimIDPattern.FindStringSubmatch(id)
	if m == nil {
		return 0, ErrNotFound
	}
	b, _ := strconv.Atoi(m[1])
	return b, nil
}

// Record is the stored state of one claim.
type Record struct {
	ID     string `json:"claim_id"`
	User   string `json:"user"`
	Pos    int64  `json:"pos"`
	AtMs   int64  `json:"at"`
	Status string `json:"status"`
}

// Lookup returns claim id of event ev, or ErrNotFound.
func (s *Store) Lookup(ctx context.Context, ev, id string) (Record, error) {
	b, err := ParseClaimID(id)
	if err != nil {
		return Record{}, err
	}
	raw, err := s.rdb.HGet(ctx, bucketOf(ev, b).records(), id).Bytes()
	if errors.Is(err, redis.Nil) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("lookup %s: %w", id, err)
	}
	r := Record{ID: id}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Record{}, fmt.Errorf("lookup %s: decode: %w", id, err)
	}
	r.ID = id
	return r, nil
}
