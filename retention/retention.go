// Package retention owns how long a sale's personal data is kept in
// Redis: every per-person key of a sale (its queue's user buckets, tickets'
// sessions, held and past claims, idempotency keys, signal sets, push
// subscriptions, pass redemptions, lanes' queues, the door lists' copies)
// expires at most Period after the sale's end.
//
// A sale's keys all live under its hash tags: "ar:{<ev>}:" (the sale, its
// lanes), "ar:{<ev>.<s>}:" (join shards) and "ar:{<ev>#<b>}:" (stock
// buckets). After the sale's end a Sweeper walks those keys (SCAN, on
// every master of a Redis Cluster) and sets on each an expiry at the end
// plus Period, unless it expires sooner already (PEXPIREAT … LT), except
// the aggregate keys the sale's configuration, its stock and its report
// read (Kept): those hold no one's identifier and stay. A key a script
// writes after one sweep is caught by the next: the node sweeps each
// ended sale every round (Run's every) until its keys are gone.
//
// Why after the end rather than at each write: a sale's end can move
// (staff extend it) until it passes, and a key written with yesterday's
// end would expire under a running sale. Keys that have a shorter life of
// their own (idempotency keys, admission sessions, the signal sets at
// Request.SignalsUntil, which is the same end plus Period) keep it.
package retention

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPeriod is how long a sale's per-person keys are kept after its
// end unless the node is told otherwise (ANTEROOM_RETENTION): long enough
// for the shop to settle orders and staff to review the sweep, short
// enough that a sale's shoppers are forgotten within the month.
const DefaultPeriod = 7 * 24 * time.Hour

// Kept are the suffixes (after a sale's hash tag and, in a lane, after
// "l:<lane>:") of the keys that hold no one's identifier and outlive the
// retention period: the configuration and page; the queue's counter, its
// fences and frozen window; the frontier, its history and the report's
// counts; the lifecycle state and its recent transitions; stock and its
// bookkeeping; and the bitmaps and sets indexed by queue position
// (presence, claimed, finished, active, late, readmitted, held), which
// name no one once the user buckets that map a user to a position are
// gone. Every other key under a sale's tags is per-person: user buckets,
// claim records and their expiry index, held and past claims, idempotency
// keys, signal sets, admission sessions, push subscriptions, passes and
// their redemptions, the door lists' copies.
var Kept = []string{
	"cfg", "page",
	"seq", "fence", "sf", "sec", "W", "w", "win",
	"adm", "hist", "health", "etas", "tally", "refused", "passcount",
	"lc", "lc:recent",
	"stock", "stats", "gen", "frozen", "xfer", "parked", "xin",
	"present", "claimbits", "claimed", "fin", "act", "late", "readmit", "heldlog",
}

// kept is Kept as a set.
var kept = func() map[string]bool {
	m := make(map[string]bool, len(Kept))
	for _, k := range Kept {
		m[k] = true
	}
	return m
}()

// Until is the latest instant a per-person key of a sale that ends at end
// may live, with retention period.
func Until(end time.Time, period time.Duration) time.Time { return end.Add(period) }

// Sweeper sets the expiries of ended sales' per-person keys. It is safe
// for concurrent use; sweeps on several nodes set the same expiries.
type Sweeper struct {
	rdb    redis.UniversalClient
	period time.Duration
	batch  int64
}

// New returns a Sweeper of the sales on rdb keeping per-person keys period
// after each sale's end (DefaultPeriod when period ≤ 0).
func New(rdb redis.UniversalClient, period time.Duration) *Sweeper {
	if period <= 0 {
		period = DefaultPeriod
	}
	return &Sweeper{rdb: rdb, period: period, batch: 1000}
}

// Period is how long after a sale's end its per-person keys are kept.
func (s *Sweeper) Period() time.Duration { return s.period }

// Pattern is the SCAN pattern of every key of sale ev, in one pass: its
// own tag ("ar:{ev}:"), its join shards' ("ar:{ev.<s>}:") and its stock
// buckets' ("ar:{ev#<b>}:"). Event ids are [a-z0-9_-], so it matches no
// other sale's keys.
func Pattern(ev string) string { return "ar:{" + ev + "[}.#]*" }

// PerPerson reports whether key, a key of a sale, is per-person: any key
// under the sale's tags whose suffix is not Kept.
func PerPerson(key string) bool {
	i := strings.Index(key, "}:")
	if i < 0 {
		return false
	}
	return !kept[Suffix(key[i+2:])]
}

// Suffix is what names a key's kind after its sale's hash tag: rest
// without a lane's "l:<lane>:" prefix.
func Suffix(rest string) string {
	if r, ok := strings.CutPrefix(rest, "l:"); ok {
		if j := strings.IndexByte(r, ':'); j > 0 && strings.Trim(r[:j], "0123456789") == "" {
			return r[j+1:]
		}
	}
	return rest
}

// Sweep sets on every per-person key of sale ev, which ends at end, an
// expiry at end plus the period, unless the key expires sooner already.
// Before end it does nothing. It returns how many keys it looked at.
func (s *Sweeper) Sweep(ctx context.Context, ev string, end, now time.Time) (int, error) {
	if end.IsZero() || now.Before(end) {
		return 0, nil
	}
	at := Until(end, s.period)
	var seen atomic.Int64 // masters are walked concurrently
	err := forEachMaster(ctx, s.rdb, func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, Pattern(ev), s.batch).Iterator()
		var keys []string
		for iter.Next(ctx) {
			k := iter.Val()
			seen.Add(1)
			if !PerPerson(k) {
				continue
			}
			keys = append(keys, k)
			if int64(len(keys)) >= s.batch {
				if err := s.expire(ctx, c, keys, at); err != nil {
					return err
				}
				keys = keys[:0]
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		if err := s.expire(ctx, c, keys, at); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return int(seen.Load()), fmt.Errorf("retention %s: %w", ev, err)
	}
	return int(seen.Load()), nil
}

// expire sets keys' expiry to at unless they expire sooner, in one
// pipeline (PEXPIREAT … LT: a key without expiry counts as never
// expiring, so it gets at).
func (s *Sweeper) expire(ctx context.Context, c *redis.Client, keys []string, at time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	ms := at.UnixMilli()
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Do(ctx, "PEXPIREAT", k, ms, "LT")
		}
		return nil
	})
	return err
}

// forEachMaster calls f on every master of a Redis Cluster, or on the one
// server of any other client.
func forEachMaster(ctx context.Context, rdb redis.UniversalClient, f func(context.Context, *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, f)
	case *redis.Client:
		return f(ctx, c)
	}
	return errors.New("retention: a Redis client that is neither a server nor a cluster")
}
