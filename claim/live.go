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
	// Known is false while some bucket's stock is not what it will be: a
	// staff save holds it or a rebuild froze it, or it was never laid (a
	// new event whose configuration is saved and whose stock is not laid
	// yet, or a server that lost it). Stock that is not known is not
	// gone: a sale is never judged sold out from it.
	Known bool
}

// Live reads each of sale's buckets' stock and released count in one pipelined round
// trip (split per shard on a cluster) and, when pending is true, the
// positions holding a pending claim with one read-only script per bucket.
func (s *Store) Live(ctx context.Context, sale Sale, pending bool) (Live, error) {
	sc := make([]*redis.StringCmd, sale.Buckets)
	rc := make([]*redis.SliceCmd, sale.Buckets)
	fc := make([]*redis.IntCmd, sale.Buckets)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range sale.Buckets {
			k := bucketOf(sale.ID, b)
			sc[b] = p.Get(ctx, k.stock())
			rc[b] = p.HMGet(ctx, k.stats(), "released", "epoch")
			fc[b] = p.Exists(ctx, k.frozen())
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Live{}, fmt.Errorf("stock %s: %w", sale.ID, err)
	}
	l := Live{Stock: make([]int64, sale.Buckets), Known: true}
	for b := range sale.Buckets {
		l.Stock[b], _ = sc[b].Int64()
		st := rc[b].Val()
		if len(st) == 2 {
			r, _ := st[0].(string)
			n, _ := strconv.ParseInt(r, 10, 64)
			l.Released += n
		}
		if len(st) != 2 || st[1] == nil || fc[b].Val() != 0 {
			l.Known = false
		}
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
