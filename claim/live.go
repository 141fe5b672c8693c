package claim

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

//go:embed pending.lua
var pendingLua string

// MaxPendingRead bounds how many pending claims Live reads per bucket.
const MaxPendingRead = 10_000

// Live is what the admission frontier needs from an event's buckets on
// every tick.
type Live struct {
	// Stock is the units left in each bucket.
	Stock []int64
	// Released counts units released back to stock since the sale began.
	Released int64
	// Pending are the positions holding a pending claim (read only when
	// asked for), at most MaxPendingRead per bucket.
	Pending []int64
}

// Live reads each of sale's buckets' stock and released count in one pipelined round
// trip (split per shard on a cluster) and, when pending is true, the
// positions holding a pending claim with one read-only script per bucket.
func (s *Store) Live(ctx context.Context, sale Sale, pending bool) (Live, error) {
	sc := make([]*redis.StringCmd, sale.Buckets)
	rc := make([]*redis.StringCmd, sale.Buckets)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range sale.Buckets {
			k := bucketOf(sale.ID, b)
			sc[b] = p.Get(ctx, k.stock())
			rc[b] = p.HGet(ctx, k.stats(), "released")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Live{}, fmt.Errorf("stock %s: %w", sale.ID, err)
	}
	l := Live{Stock: make([]int64, sale.Buckets)}
	for b := range sale.Buckets {
		l.Stock[b], _ = sc[b].Int64()
		r, _ := strconv.ParseInt(rc[b].Val(), 10, 64)
		l.Released += r
	}
	if !pending {
		return l, nil
	}
	for b := range sale.Buckets {
		k := bucketOf(sale.ID, b)
		ps, err := s.lua.pending.Run(ctx, s.rdb, []string{k.expiry(), k.records()}, MaxPendingRead).Int64Slice()
		if err != nil && !errors.Is(err, redis.Nil) {
			return Live{}, fmt.Errorf("pending %s/%d: %w", sale.ID, b, err)
		}
		l.Pending = append(l.Pending, ps...)
	}
	return l, nil
}
