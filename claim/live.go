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
	// Released counts units returned to stock since the sale began:
	// released claims and cancelled ones restocked.
	Released int64
	// Pending are the pending claims' holders, one per claim (read only
	// when asked for), at most MaxPendingRead per bucket: a person holding
	// several claims appears several times.
	Pending []Holder
	// Known is false while some bucket's stock is not what it will be: a
	// staff save holds it or a rebuild froze it, or it was never laid (a
	// new event whose configuration is saved and whose stock is not laid
	// yet, or a server that lost it). Stock that is not known is not
	// gone: a sale is never judged sold out from it.
	Known bool
}

// Holder is who holds one pending claim: the admission position the claim
// was made with and the user. Every bypass pass holder has the same
// position, so only the user names a person.
type Holder struct {
	Pos  int64
	User string
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
			rc[b] = p.HMGet(ctx, k.stats(), "released", "epoch", "restocked")
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
		if len(st) == 3 {
			r, _ := st[0].(string)
			n, _ := strconv.ParseInt(r, 10, 64)
			rs, _ := st[2].(string)
			m, _ := strconv.ParseInt(rs, 10, 64)
			l.Released += n + m
		}
		if len(st) != 3 || st[1] == nil || fc[b].Val() != 0 {
			l.Known = false
		}
	}
	if !pending {
		return l, nil
	}
	for b := range sale.Buckets {
		k := bucketOf(sale.ID, b)
		res, err := s.lua.pending.Run(ctx, s.rdb, []string{k.expiry(), k.records()}, MaxPendingRead).Slice()
		if err != nil && !errors.Is(err, redis.Nil) {
			return Live{}, fmt.Errorf("pending %s/%d: %w", sale.ID, b, err)
		}
		if l.Pending, err = appendHolders(l.Pending, res); err != nil {
			return Live{}, fmt.Errorf("pending %s/%d: %w", sale.ID, b, err)
		}
	}
	return l, nil
}

// appendHolders appends pending.lua's reply (position, user, …) to hs.
func appendHolders(hs []Holder, res []any) ([]Holder, error) {
	if len(res)%2 != 0 {
		return hs, fmt.Errorf("unexpected reply of %d values", len(res))
	}
	for i := 0; i < len(res); i += 2 {
		pos, ok1 := res[i].(int64)
		user, ok2 := res[i+1].(string)
		if !ok1 || !ok2 {
			return hs, fmt.Errorf("unexpected reply %v %v", res[i], res[i+1])
		}
		hs = append(hs, Holder{Pos: pos, User: user})
	}
	return hs, nil
}
