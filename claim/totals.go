package claim

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Totals sums an event's buckets. Units on sale = Remaining + Parked +
// Granted − Released − Restocked, always.
type Totals struct {
	Remaining int64 `json:"remaining"`
	Granted   int64 `json:"granted"`
	Released  int64 `json:"released"`
	// Cancelled counts claims staff cancelled; Restocked those of them
	// whose unit went back to the stock.
	Cancelled int64 `json:"cancelled"`
	Restocked int64 `json:"restocked"`
	Outbox    int64 `json:"outbox"`
	// Parked counts units in transfers between buckets not yet settled.
	Parked int64 `json:"parked"`
}

// Totals reads every bucket of sale in one pipelined round trip (split per
// shard on a cluster).
func (s *Store) Totals(ctx context.Context, sale Sale) (Totals, error) {
	stock := make([]*redis.StringCmd, sale.Buckets)
	parked := make([]*redis.StringCmd, sale.Buckets)
	stats := make([]*redis.MapStringStringCmd, sale.Buckets)
	box := make([]*redis.IntCmd, sale.Buckets)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range sale.Buckets {
			k := bucketOf(sale.ID, b)
			stock[b] = p.Get(ctx, k.stock())
			parked[b] = p.Get(ctx, k.parked())
			stats[b] = p.HGetAll(ctx, k.stats())
			box[b] = p.HLen(ctx, k.outbox())
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Totals{}, fmt.Errorf("totals %s: %w", sale.ID, err)
	}
	var t Totals
	for b := range sale.Buckets {
		n, _ := stock[b].Int64()
		p, _ := parked[b].Int64()
		t.Remaining += n
		t.Parked += p
		m := stats[b].Val()
		g, _ := strconv.ParseInt(m["granted"], 10, 64)
		r, _ := strconv.ParseInt(m["released"], 10, 64)
		t.Granted += g
		t.Released += r
		c, _ := strconv.ParseInt(m["cancelled"], 10, 64)
		rs, _ := strconv.ParseInt(m["restocked"], 10, 64)
		t.Cancelled += c
		t.Restocked += rs
		t.Outbox += box[b].Val()
	}
	return t, nil
}

// BucketStock returns the units left in each of sale's buckets, in one
// pipelined round trip.
func (s *Store) BucketStock(ctx context.Context, sale Sale) ([]int64, error) {
	stock, _, err := s.stockAndParked(ctx, sale, false)
	return stock, err
}

// Remaining returns the units left in sale's buckets.
func (s *Store) Remaining(ctx context.Context, sale Sale) (int64, error) {
	stock, err := s.BucketStock(ctx, sale)
	var n int64
	for _, v := range stock {
		n += v
	}
	return n, err
}

// stockAndParked reads each bucket's stock and, with parked, the units it
// has sent out in unsettled transfers.
func (s *Store) stockAndParked(ctx context.Context, sale Sale, parked bool) (stock, out []int64, err error) {
	sc := make([]*redis.StringCmd, sale.Buckets)
	pc := make([]*redis.StringCmd, sale.Buckets)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range sale.Buckets {
			sc[b] = p.Get(ctx, bucketOf(sale.ID, b).stock())
			if parked {
				pc[b] = p.Get(ctx, bucketOf(sale.ID, b).parked())
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, fmt.Errorf("stock %s: %w", sale.ID, err)
	}
	stock = make([]int64, sale.Buckets)
	out = make([]int64, sale.Buckets)
	for b := range sale.Buckets {
		stock[b], _ = sc[b].Int64()
		if parked {
			out[b], _ = pc[b].Int64()
		}
	}
	return stock, out, nil
}

// outboxEntries returns the order events waiting in bucket b of event ev,
// keyed by message id.
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
