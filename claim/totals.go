package claim

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Totals sums an event's buckets.
type Totals struct {
	Remaining int64 `json:"remaining"`
	Granted   int64 `json:"granted"`
	Released  int64 `json:"released"`
	Outbox    int64 `json:"outbox"`
}

// Totals reads every bucket of event ev in one pipelined round trip (split
// per shard on a cluster).
func (s *Store) Totals(ctx context.Context, ev string, buckets int) (Totals, error) {
	stock := make([]*redis.StringCmd, buckets)
	stats := make([]*redis.MapStringStringCmd, buckets)
	box := make([]*redis.IntCmd, buckets)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range buckets {
			k := bucketOf(ev, b)
			stock[b] = p.Get(ctx, k.stock())
			stats[b] = p.HGetAll(ctx, k.stats())
			box[b] = p.HLen(ctx, k.outbox())
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Totals{}, fmt.Errorf("totals %s: %w", ev, err)
	}
	var t Totals
	for b := range buckets {
		n, _ := stock[b].Int64()
		t.Remaining += n
		m := stats[b].Val()
		g, _ := strconv.ParseInt(m["granted"], 10, 64)
		r, _ := strconv.ParseInt(m["released"], 10, 64)
		t.Granted += g
		t.Released += r
		t.Outbox += box[b].Val()
	}
	return t, nil
}

// outboxEntries returns the order events waiting in bucket b of event ev.
func (s *Store) outboxEntries(ctx context.Context, ev string, b int) (map[string]string, error) {
	m, err := s.rdb.HGetAll(ctx, bucketOf(ev, b).outbox()).Result()
	if err != nil {
		return nil, fmt.Errorf("outbox %s/%d: %w", ev, b, err)
	}
	return m, nil
}

// unbox removes published entries from bucket b's outbox.
func (s *Store) unbox(ctx context.Context, ev string, b int, ids []string) error {
	if err := s.rdb.HDel(ctx, bucketOf(ev, b).outbox(), ids...).Err(); err != nil {
		return fmt.Errorf("unbox %s/%d: %w", ev, b, err)
	}
	return nil
}

// Remaining returns the units left in event ev's buckets.
func (s *Store) Remaining(ctx context.Context, ev string, buckets int) (int64, error) {
	cmds := make([]*redis.StringCmd, buckets)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range buckets {
			cmds[b] = p.Get(ctx, bucketOf(ev, b).stock())
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("remaining %s: %w", ev, err)
	}
	var n int64
	for _, c := range cmds {
		v, _ := c.Int64()
		n += v
	}
	return n, nil
}
