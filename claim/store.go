package claim

import (
	"cmp"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

// Outcomes callers branch on.
var (
	ErrSoldOut      = errors.New("claim: sold out")
	ErrLimitReached = errors.New("claim: per-user limit reached")
	ErrNotFound     = errors.New("claim: no such claim")
	ErrUnavailable  = errors.New("claim: order stream unavailable")
	// ErrNeedsRebuild means a bucket's Redis server is not the one its
	// stock was laid or rebuilt on — a failover promoted a replica that may
	// have missed grants, a slot migration moved the bucket, or the server
	// lost the bucket's data — so claims, releases and confirmations wait
	// for POST /admin/events/{id}/rebuild. It wraps ErrPaused.
	ErrNeedsRebuild = fmt.Errorf("%w: the bucket's Redis server changed since the stock was laid (failover, slot migration or lost data); rebuild it from the order stream (POST /admin/events/{id}/rebuild)", ErrPaused)
	// ErrPaused means the event's buckets are frozen by a rebuild; retry
	// with the same idempotency key once it is done.
	ErrPaused = errors.New("claim: paused for a rebuild")
	// ErrConfirmed means a claim is confirmed and cannot be released.
	ErrConfirmed = errors.New("claim: confirmed claims cannot be released")
)

// LimitError is returned with ErrLimitReached; it carries the claim ids the
// user already holds.
type LimitError struct{ Held []string }

// Error says the limit was reached; the held ids are in Held.
func (e *LimitError) Error() string { return ErrLimitReached.Error() }

// Unwrap makes errors.Is(err, ErrLimitReached) true.
func (e *LimitError) Unwrap() error { return ErrLimitReached }

var (
	//go:embed claim.lua
	claimLua string
	//go:embed donate.lua
	donateLua string
	//go:embed accept.lua
	acceptLua string
	//go:embed settle.lua
	settleLua string
	//go:embed release.lua
	releaseLua string
	//go:embed confirm.lua
	confirmLua string
	//go:embed mine.lua
	mineLua string
	//go:embed restore.lua
	restoreLua string
	//go:embed restore_claims.lua
	restoreClaimsLua string
	//go:embed freeze.lua
	freezeLua string
	//go:embed unfreeze.lua
	unfreezeLua string
	//go:embed lay.lua
	layLua string
	//go:embed cancel.lua
	cancelLua string
)

// Store runs the claim scripts and reads claim state. Every script touches
// the keys of one bucket only (one hash tag), so a Store works the same on
// one Redis and on a Redis Cluster. It is safe for concurrent use.
type Store struct {
	rdb redis.UniversalClient
	lua scripts
}

// scripts are the Lua scripts, loaded once (EVALSHA with EVAL fallback).
type scripts struct {
	claim, donate, accept, settle *redis.Script
	release, confirm, mine        *redis.Script
	restore, restoreClaims        *redis.Script
	freeze, unfreeze, lay         *redis.Script
	layFor, pending, cancel       *redis.Script
}

// NewStore returns a Store on rdb (a *redis.Client or *redis.ClusterClient).
func NewStore(rdb redis.UniversalClient) *Store {
	return &Store{rdb: rdb, lua: scripts{
		claim: luascript.New(claimLua), donate: luascript.New(donateLua),
		accept: luascript.New(acceptLua), settle: luascript.New(settleLua),
		release: luascript.New(releaseLua), confirm: luascript.New(confirmLua),
		mine: luascript.New(mineLua), restore: luascript.New(restoreLua),
		restoreClaims: luascript.New(restoreClaimsLua),
		freeze:        luascript.New(freezeLua), unfreeze: luascript.New(unfreezeLua),
		lay: luascript.New(layLua), layFor: luascript.New(layForLua),
		pending: luascript.New(pendingLua), cancel: luascript.New(cancelLua),
	}}
}

// Lay sets the stock of sale: units spread evenly over its buckets. It
// overwrites, so callers use it only before the sale starts.
func (s *Store) Lay(ctx context.Context, sale Sale, units int64) error {
	for b := range sale.Buckets {
		k := bucketOf(sale.ID, b)
		if err := s.lua.lay.Run(ctx, s.rdb, []string{k.stock(), k.stats()}, sale.share(units, b)).Err(); err != nil {
			return fmt.Errorf("lay stock %s/%d: %w", sale.ID, b, err)
		}
	}
	return nil
}

// OrderEvent is the message published to JetStream for every state change
// of a claim: Nats-Msg-Id is the claim id for "granted" and "<claim
// id>:released" for "released".
type OrderEvent struct {
	Type    Kind      `json:"type"`
	Event   string    `json:"event"`
	ClaimID string    `json:"claim_id"`
	User    string    `json:"user"`
	Pos     int64     `json:"pos"`
	Units   int64     `json:"units"`
	At      time.Time `json:"at"`
	// Idem is the request's idempotency key, so that a rebuild can restore
	// it.
	Idem string `json:"idem,omitempty"`
	// Reason says why a claim was released (user, admin, expired,
	// reconciled) or, on an order_cancelled event, staff's reason.
	Reason Reason `json:"reason,omitempty"`
	// Restock is, on an order_cancelled event, whether the unit went back
	// to the stock; Was the claim's status before (pending or confirmed);
	// By the staff member who cancelled it.
	Restock bool   `json:"restock,omitempty"`
	Was     Status `json:"was,omitempty"`
	By      string `json:"by,omitempty"`
	// TraceID is, on a granted event, the W3C trace id (32 lowercase hex
	// digits) of the claim request that was granted, when that request
	// was traced and its trace sampled; otherwise absent. It comes before
	// Epoch, which claim.lua appends as the last member.
	TraceID string `json:"trace_id,omitempty"`
	// Signals are, on a granted event of a sale with signal limits, the
	// claim's signals as "<dim>:<hash>" separated by spaces (the keyed
	// hashes the claim script counted, never a value), so that a rebuild
	// restores the signal sets of the claims it restores.
	Signals string `json:"signals,omitempty"`
	// SignalsUntil is when those signal sets expire (UTC).
	SignalsUntil time.Time `json:"signals_until,omitzero"`
	// Epoch is, on a granted event, the stream sequence of the epoch
	// marker its bucket's stock descends from (0: laid, never rebuilt);
	// claim.lua writes it (see EpochSubject and the package doc's fence).
	Epoch uint64 `json:"epoch,omitempty"`
	// Seq is the event's stream sequence when it was read from the
	// stream, else 0.
	Seq uint64 `json:"-"`
}

// msgID is the Nats-Msg-Id (and outbox field) of the event.
func (e *OrderEvent) msgID() string {
	switch e.Type {
	case KindReleased:
		return e.ClaimID + ":released"
	case KindCancelled:
		return e.ClaimID + ":cancelled"
	}
	return e.ClaimID
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

// Record is the stored state of one claim. Status is pending, confirmed,
// released or cancelled.
type Record struct {
	ID     string `json:"claim_id"`
	User   string `json:"user"`
	Pos    int64  `json:"pos"`
	AtMs   int64  `json:"at"`
	Status Status `json:"status"`
	Idem   string `json:"idem,omitempty"`
	// CancelReason and Restock are a cancelled claim's (cancel.go).
	CancelReason string `json:"cancel_reason,omitempty"`
	Restock      bool   `json:"restock,omitempty"`
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
	return decodeRecord(id, raw)
}

func decodeRecord(id string, raw []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return Record{}, fmt.Errorf("claim %s: decode: %w", id, err)
	}
	r.ID = id
	return r, nil
}

// Mine returns every claim user ever held in sale (pending, confirmed or
// released), read from the user's home bucket in one round trip.
func (s *Store) Mine(ctx context.Context, sale Sale, user string) ([]Record, error) {
	k := bucketOf(sale.ID, HomeBucket(user, sale.Buckets))
	res, err := s.lua.mine.Run(ctx, s.rdb, []string{k.userHistory(user), k.records()}).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("claims of %s: %w", sale.ID, err)
	}
	out := make([]Record, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		r, err := decodeRecord(res[i], []byte(res[i+1]))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return cmp.Compare(a.AtMs, b.AtMs) })
	return out, nil
}
