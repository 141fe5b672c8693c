package report

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Refusals counts the requests an event's edge turned away, by reason
// ("join.rate_limited", "claim.sold_out", …), and the requests each rule
// of the event's door decided (Match). Add and Match are a map increment
// under a mutex: no Redis on the request path. Flush moves the counts to
// a Redis hash per event (HINCRBY, one pipelined round trip), every
// second under Run and once more when Run ends, so the report reads the
// same totals from any node after any restart; at most the last second of
// a crashed node is lost. It is safe for concurrent use.
type Refusals struct {
	rdb redis.Cmdable

	mu      sync.Mutex
	pending counts // event → reason → count
	matches counts // event → rule name → count
}

// RulePrefix starts the field of a rule's matches in an event's hash of
// refusals: "rule.<name>". A refusal's reason starts with its step
// ("join.", "claim."), and a rule's name has no '.', so the two never meet.
const RulePrefix = "rule."

// counts are per-event counters by name.
type counts map[string]map[string]int64

// add counts n for name in event ev, copying both strings when they are
// new to the map (they may point into a request's buffers).
func (c counts) add(ev, name string, n int64) {
	m := c[ev]
	if m == nil {
		m = map[string]int64{}
		c[strings.Clone(ev)] = m
	}
	if _, ok := m[name]; !ok {
		name = strings.Clone(name)
	}
	m[name] += n
}

// NewRefusals returns an empty counter writing to rdb.
func NewRefusals(rdb redis.Cmdable) *Refusals {
	return &Refusals{rdb: rdb, pending: counts{}, matches: counts{}}
}

// Add counts one refusal of reason in event ev. Both strings are copied.
func (r *Refusals) Add(ev, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending.add(ev, reason, 1)
}

// Match counts one request the door's rule named rule decided in event ev
// (door.Verdict.Rule): the report's door section. Both strings are
// copied; nothing is allocated for a rule already counted since the last
// flush.
func (r *Refusals) Match(ev, rule string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.matches.add(ev, rule, 1)
}

// Flush writes the counts added since the last flush to Redis; on an
// error they are kept for the next one.
func (r *Refusals) Flush(ctx context.Context) error {
	r.mu.Lock()
	batch, matches := r.pending, r.matches
	r.pending, r.matches = counts{}, counts{}
	r.mu.Unlock()
	if len(batch) == 0 && len(matches) == 0 {
		return nil
	}
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for ev, m := range batch {
			for reason, n := range m {
				p.HIncrBy(ctx, refusedKey(ev), reason, n)
			}
		}
		for ev, m := range matches {
			for rule, n := range m {
				p.HIncrBy(ctx, refusedKey(ev), RulePrefix+rule, n)
			}
		}
		return nil
	})
	if err != nil {
		// A pipeline may have applied some increments before failing;
		// putting everything back may then count those twice, which a
		// report of refusals tolerates better than losing them.
		r.mu.Lock()
		for _, back := range [...]struct{ from, to counts }{{batch, r.pending}, {matches, r.matches}} {
			for ev, m := range back.from {
				for name, n := range m {
					back.to.add(ev, name, n)
				}
			}
		}
		r.mu.Unlock()
		return fmt.Errorf("refusals: %w", err)
	}
	return nil
}

// Run flushes every interval until ctx is done, then once more. Errors go
// to onErr.
func (r *Refusals) Run(ctx context.Context, every time.Duration, onErr func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := r.Flush(fctx); err != nil && onErr != nil {
				onErr(err)
			}
			return
		case <-t.C:
			if err := r.Flush(ctx); err != nil && onErr != nil && ctx.Err() == nil {
				onErr(err)
			}
		}
	}
}

// Read returns event ev's counts in Redis: refusals by reason, and the
// matches of each rule as RulePrefix+name.
func (r *Refusals) Read(ctx context.Context, ev string) (map[string]int64, error) {
	m, err := r.rdb.HGetAll(ctx, refusedKey(ev)).Result()
	if err != nil {
		return nil, fmt.Errorf("refusals %s: %w", ev, err)
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		n, _ := strconv.ParseInt(v, 10, 64)
		out[k] = n
	}
	return out, nil
}

func refusedKey(ev string) string { return "ar:{" + ev + "}:refused" }
