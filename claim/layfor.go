package claim

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/event"
)

//go:embed layfor.lua
var layForLua string

// Stock is how an event's units on sale are spread: Units evenly over
// Buckets. The zero Stock is an event that has none yet.
type Stock struct {
	Buckets int
	Units   int64
}

// Restock is a staff save's change of an event's stock, from the stored
// configuration's to the one being saved.
type Restock struct {
	Event    string
	From, To Stock
	// Version is the configuration version being saved.
	Version int64
	// Lock is the instant, by Redis TIME, from which the change is refused
	// (event.LockAt); the zero time: never.
	Lock time.Time
}

// buckets is every bucket the change touches: those of both shapes.
func (r *Restock) buckets() int { return max(r.From.Buckets, r.To.Buckets) }

func share(s Stock, b int) int64 {
	if b >= s.Buckets {
		return 0
	}
	return Sale{Buckets: s.Buckets}.share(s.Units, b)
}

// Hold is a staff save's hold on an event's buckets: while it lasts, claims,
// transfers, releases and confirmations on them wait (ErrPaused), and
// rebuilds and other saves are refused. Lay applies the change; Release
// ends the hold. A Hold is used by one goroutine.
type Hold struct {
	s     *Store
	r     Restock
	token string
	ttl   time.Duration
}

// Errors of Hold and Lay besides ErrNeedsRebuild and event.ErrLocked.
var (
	// ErrHeld means another staff save holds the event's buckets: read
	// the configuration again and retry. It wraps event.ErrConflict.
	ErrHeld = fmt.Errorf("%w: another save is laying this event's stock", event.ErrConflict)
	// ErrHoldLost means a save's hold ended before its stock was laid
	// (it outlived its lifetime, or a rebuild took the buckets over).
	ErrHoldLost = errors.New("claim: the save's hold on the stock ended before it was laid")
	// ErrLockReached means the change is refused because Redis TIME has
	// reached Restock.Lock. It wraps event.ErrLocked.
	ErrLockReached = fmt.Errorf("%w: the change is locked by now", event.ErrLocked)
)

// DefaultHoldTTL is how long a hold lasts when ctx has no deadline; with
// one, it lasts until the deadline and as long again.
const DefaultHoldTTL = 10 * time.Second

// Hold checks that every bucket of r can take the change, and holds them
// all; nothing is written when it fails. A bucket can take it when its
// server is the one its stock was laid or rebuilt on (else
// ErrNeedsRebuild: a failover may have lost grants, so nothing may be
// laid or counted there before a rebuild), when the units sold or moved
// from it stay within its new share and the bucket count changes only
// before any grant, and before r.Lock (else an error wrapping
// event.ErrLocked). A rebuild running answers ErrRebuildRunning, another
// save's hold ErrHeld. The stock is laid only by Lay, after the
// configuration is stored: a save that stores nothing lays nothing.
func (s *Store) Hold(ctx context.Context, r Restock) (*Hold, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	ttl := DefaultHoldTTL
	if d, ok := ctx.Deadline(); ok {
		ttl = 2 * time.Until(d)
	}
	h := &Hold{s: s, r: r, ttl: max(ttl, time.Second),
		token: "save:" + hex.EncodeToString(b[:]) + "@" + strconv.FormatInt(time.Now().UnixMilli(), 10)}
	for i := range r.buckets() {
		if err := h.run(ctx, "hold", i); err != nil {
			if rerr := h.release(ctx, i); rerr != nil {
				err = errors.Join(err, rerr)
			}
			return nil, err
		}
	}
	return h, nil
}

// Lay applies the held change to every bucket as a delta: stock += new
// share − the share laid for the stored version, so units claimed before
// the hold stay claimed. A bucket that already holds this version's stock
// (or a newer one's) is left as it is. An error means the configuration
// is stored and some stock is not laid: a rebuild lays it from the stored
// configuration, and so does the next save that changes the stock.
func (h *Hold) Lay(ctx context.Context) error {
	for i := range h.r.buckets() {
		if err := h.run(ctx, "lay", i); err != nil {
			return err
		}
	}
	return nil
}

// Release ends the hold on every bucket still held by it.
func (h *Hold) Release(ctx context.Context) error {
	return h.release(ctx, h.r.buckets())
}

func (h *Hold) release(ctx context.Context, n int) error {
	var errs []error
	for i := range n {
		k := bucketOf(h.r.Event, i)
		if err := h.s.lua.unfreeze.Run(ctx, h.s.rdb, []string{k.frozen()}, h.token).Err(); err != nil {
			errs = append(errs, fmt.Errorf("release the hold on %s/%d: %w", h.r.Event, i, err))
		}
	}
	return errors.Join(errs...)
}

func (h *Hold) run(ctx context.Context, mode string, b int) error {
	r, k := &h.r, bucketOf(h.r.Event, b)
	var lock int64
	if !r.Lock.IsZero() {
		lock = max(r.Lock.UnixMilli(), 1)
	}
	res, err := h.s.lua.layFor.Run(ctx, h.s.rdb, []string{k.stock(), k.stats(), k.frozen()},
		mode, h.token, h.ttl.Milliseconds(), share(r.To, b), r.Version, bit(b >= r.From.Buckets),
		bit(r.From.Buckets != 0 && r.From.Buckets != r.To.Buckets), share(r.From, b), lock).Int64()
	if err != nil {
		return fmt.Errorf("%s stock %s/%d: %w", mode, r.Event, b, err)
	}
	switch res {
	case 1:
		return nil
	case 0:
		if mode == "hold" {
			return fmt.Errorf("%w: version %d of %s is laid already", event.ErrConflict, r.Version, r.Event)
		}
		return nil
	case -1:
		return fmt.Errorf("%w: the stock of %s/%d cannot take this change (more units are sold from it than its new share, or the bucket count changes after units were sold)", event.ErrLocked, r.Event, b)
	case -2:
		return fmt.Errorf("stock %s/%d: %w", r.Event, b, ErrNeedsRebuild)
	case -3:
		return fmt.Errorf("stock %s/%d: %w", r.Event, b, ErrRebuildRunning)
	case -4:
		return fmt.Errorf("stock %s/%d: %w", r.Event, b, ErrHeld)
	case -6:
		return fmt.Errorf("stock %s/%d: %w", r.Event, b, ErrLockReached)
	default:
		return fmt.Errorf("stock %s/%d: %w", r.Event, b, ErrHoldLost)
	}
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// LayFor holds r's buckets, lays the change and releases them: for a
// configuration already stored (tools and tests; staff saves store the
// configuration between Hold and Lay).
func (s *Store) LayFor(ctx context.Context, r Restock) error {
	h, err := s.Hold(ctx, r)
	if err != nil {
		return err
	}
	err = h.Lay(ctx)
	if rerr := h.Release(context.WithoutCancel(ctx)); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}
