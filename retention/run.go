package retention

import (
	"context"
	"time"
)

// Sale is what a sweep needs of a sale: its id and its end.
type Sale struct {
	ID  string
	End time.Time
}

// DefaultEvery is how often a node sweeps each ended sale by default:
// each round SCANs the whole keyspace once per ended sale (one node per
// sale and round), so it is not frequent. A key written after the last
// round before the sale's end + the period lives until the next round.
const DefaultEvery = 15 * time.Minute

// Run sweeps, every every (DefaultEvery when ≤ 0), each of sales() that
// has ended and whose per-person keys may still live (until its end plus
// the period plus one round), until ctx ends. Nodes share the work: a
// lease per sale and round (a key under the sale's tag, expiring with the
// round) lets one node sweep it. Errors go to onErr; the next round tries
// again.
func (s *Sweeper) Run(ctx context.Context, every time.Duration, sales func() []Sale, now func() time.Time, onErr func(error)) {
	if every <= 0 {
		every = DefaultEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.round(ctx, every, sales(), now(), onErr)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// round sweeps each ended sale whose lease this node takes.
func (s *Sweeper) round(ctx context.Context, every time.Duration, sales []Sale, now time.Time, onErr func(error)) {
	for _, sl := range sales {
		if sl.End.IsZero() || now.Before(sl.End) || now.After(Until(sl.End, s.period).Add(every)) {
			continue
		}
		ok, err := s.rdb.SetNX(ctx, leaseKey(sl.ID), 1, every*9/10).Result()
		if err != nil {
			onErr(err)
			continue
		}
		if !ok {
			continue
		}
		if _, err := s.Sweep(ctx, sl.ID, sl.End, now); err != nil {
			onErr(err)
		}
	}
}

// leaseKey is the key a node sets to sweep sale ev this round.
func leaseKey(ev string) string { return "ar:{" + ev + "}:retention" }
