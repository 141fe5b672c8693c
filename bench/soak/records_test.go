//go:build soak && linux

package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/lifecycle"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// readAll reads every record sale ev left, as every reader of the product
// does, and reports the first that does not decode: each claim record in
// Redis (claim.Store.Lookup, which the claim lookup, the release, the
// expiry loop and the rebuild decode the same way), each order event still
// in an outbox, and each lifecycle event on its stream (the webhook
// deliverer's decoding). The order stream itself is read by the audit
// (claim.CountedEvents fails on an event that does not decode). A record
// nobody can read is a broken promise however many units it holds (issue
// 24, bugs 1 and 11).
func (ss *sales) readAll(ctx context.Context, ev string) error {
	rdb := ss.s.redis()
	store := claim.NewStore(rdb)
	for b := range ss.buckets(ev) {
		tag := fmt.Sprintf("ar:{%s#%d}:", ev, b) // claim/keys.go's bucketOf
		ids, err := rdb.HKeys(ctx, tag+"claims").Result()
		if err != nil {
			return nil // Redis away: not a verdict
		}
		for _, id := range ids {
			ss.checks.Add(1)
			if _, err := store.Lookup(ctx, ev, id); err != nil && !errors.Is(err, claim.ErrNotFound) {
				raw, _ := rdb.HGet(ctx, tag+"claims", id).Result()
				return fmt.Errorf("claim record %s does not decode (%v): %s", id, err, raw)
			}
		}
		box, err := rdb.HGetAll(ctx, tag+"outbox").Result()
		if err != nil {
			return nil
		}
		for id, raw := range box {
			ss.checks.Add(1)
			var oe claim.OrderEvent
			if err := json.Unmarshal([]byte(raw), &oe); err != nil {
				return fmt.Errorf("outbox entry %s does not decode (%v): %s", id, err, raw)
			}
		}
	}
	return ss.readLifecycle(ctx, ev)
}

// readLifecycle decodes every lifecycle event of sale ev on its stream.
func (ss *sales) readLifecycle(ctx context.Context, ev string) error {
	c, err := ss.s.js.OrderedConsumer(ctx, lifecycle.StreamName, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{lifecycle.Subject(ev, ">")}})
	if err != nil {
		return nil // NATS away: not a verdict
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil
	}
	for left := int(info.NumPending); left > 0; {
		batch, err := c.Fetch(min(left, 500), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil
		}
		n := 0
		for m := range batch.Messages() {
			n++
			ss.checks.Add(1)
			var e lifecycle.Event
			if err := json.Unmarshal(m.Data(), &e); err != nil {
				return fmt.Errorf("lifecycle event %s does not decode (%v): %s", m.Subject(), err, m.Data())
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil
		}
		if n == 0 {
			return nil
		}
		left -= n
	}
	return nil
}
