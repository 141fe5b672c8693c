package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// reconcileMax bounds the events one reconciliation republishes.
const reconcileMax = 1000

// Reconcile compares the grants, releases and cancellations Redis recorded
// for sale with the order stream, and republishes (at most max) the order events the
// stream lacks that are no longer in an outbox — for example after the
// stream lost messages. When the counts agree it costs one pipelined Redis
// read and one stream info request; only a shortfall reads the stream and
// the claim records. It needs WithStream and returns how many events it
// republished.
//
// Counts include duplicates a republish after the duplicate window left on
// the stream, so a duplicate can hide a missing event from the quick check;
// a rebuild compares claim by claim.
func (s *Service) Reconcile(ctx context.Context, sale Sale, max int) (int, error) {
	if s.js == nil {
		return 0, errors.New("reconcile: no stream (WithStream)")
	}
	stats := make([]*redis.MapStringStringCmd, sale.Buckets)
	boxes := make([]*redis.StringSliceCmd, sale.Buckets)
	_, err := s.store.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b := range sale.Buckets {
			k := bucketOf(sale.ID, b)
			stats[b] = p.HGetAll(ctx, k.stats()) // before the outbox: see below
			boxes[b] = p.HKeys(ctx, k.outbox())
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reconcile %s: %w", sale.ID, err)
	}
	// A grant counted in stats is in the outbox read after it, or was
	// acknowledged (and is on the stream) before the stream is asked.
	var granted, released, cancelled int64
	boxed := map[string]bool{}
	for b := range sale.Buckets {
		g, _ := strconv.ParseInt(stats[b].Val()["granted"], 10, 64)
		r, _ := strconv.ParseInt(stats[b].Val()["released"], 10, 64)
		c, _ := strconv.ParseInt(stats[b].Val()["cancelled"], 10, 64)
		granted, released, cancelled = granted+g, released+r, cancelled+c
		for _, id := range boxes[b].Val() {
			boxed[id] = true
			switch {
			case strings.HasSuffix(id, ":released"):
				released--
			case strings.HasSuffix(id, ":cancelled"):
				cancelled--
			default:
				granted--
			}
		}
	}
	counts, err := subjectCounts(ctx, s.js, sale.ID)
	if err != nil {
		return 0, err
	}
	if int64(counts[Subject(sale.ID, KindGranted)]) >= granted && int64(counts[Subject(sale.ID, KindReleased)]) >= released &&
		int64(counts[Subject(sale.ID, KindCancelled)]) >= cancelled {
		return 0, nil
	}
	return s.republishMissing(ctx, sale, boxed, max)
}

// republishMissing compares claim by claim and republishes what the stream
// and the outboxes both lack.
func (s *Service) republishMissing(ctx context.Context, sale Sale, boxed map[string]bool, max int) (int, error) {
	evs, err := ReadEvents(ctx, s.js, sale.ID)
	if err != nil {
		return 0, err
	}
	msgs, err := s.missing(ctx, sale, seenOf(evs), boxed, s.reconcileAge, max)
	if err != nil {
		return 0, err
	}
	done, err := s.publishMany(ctx, sale.ID, msgs)
	total := 0
	for _, ok := range done {
		if ok {
			total++
		}
	}
	return total, err
}

// seenOf returns the message ids of evs.
func seenOf(evs []OrderEvent) map[string]bool {
	seen := make(map[string]bool, len(evs))
	for i := range evs {
		seen[evs[i].msgID()] = true
	}
	return seen
}

// missing returns, rebuilt from sale's claim records, the order events
// (at most max) whose message ids are neither seen on the stream nor boxed
// in an outbox, skipping claims younger than minAge.
func (s *Service) missing(ctx context.Context, sale Sale, seen, boxed map[string]bool, minAge time.Duration, max int) ([]message, error) {
	young := s.now().Add(-minAge).UnixMilli()
	var msgs []message
	for b := range sale.Buckets {
		recs, err := s.store.rdb.HGetAll(ctx, bucketOf(sale.ID, b).records()).Result()
		if err != nil {
			return nil, fmt.Errorf("records %s/%d: %w", sale.ID, b, err)
		}
		// The bucket's claims belong to its current epoch: a rebuild
		// rewrote every older one.
		mark, err := s.store.rdb.HGet(ctx, bucketOf(sale.ID, b).stats(), "mark").Uint64()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("epoch %s/%d: %w", sale.ID, b, err)
		}
		for id, raw := range recs {
			rec, err := decodeRecord(id, []byte(raw))
			if err != nil {
				return nil, err
			}
			if (minAge > 0 && rec.AtMs > young) || len(msgs) >= max {
				continue
			}
			oe := OrderEvent{Type: KindGranted, Event: sale.ID, ClaimID: id, User: rec.User, Pos: rec.Pos, Units: 1,
				At: time.UnixMilli(rec.AtMs).UTC(), Idem: rec.Idem, Signals: recordSignals(raw), Epoch: mark}
			if !seen[id] && !boxed[id] {
				msgs = append(msgs, encoded(oe))
			}
			if rec.Status == StatusReleased && !seen[id+":released"] && !boxed[id+":released"] {
				oe.Type, oe.At, oe.Reason, oe.Epoch = KindReleased, s.now().UTC(), ReasonReconciled, 0
				msgs = append(msgs, encoded(oe))
			}
			if rec.Status == StatusCancelled && !seen[id+":cancelled"] && !boxed[id+":cancelled"] {
				// Rebuilt from the record, which keeps the reason and
				// the restock choice; who cancelled is in the audit.
				oe.Type, oe.At, oe.Reason, oe.Restock, oe.Epoch = KindCancelled, s.now().UTC(), Reason(rec.CancelReason), rec.Restock, 0
				msgs = append(msgs, encoded(oe))
			}
		}
	}
	return msgs, nil
}

func encoded(oe OrderEvent) message {
	raw, _ := json.Marshal(oe) // a plain struct: cannot fail
	return message{id: oe.msgID(), payload: string(raw), ev: oe}
}

// recordSignals are the signals a claim record's "sig" keys name, as a
// granted event carries them ("<dim>:<hash>" separated by spaces), so a
// republished grant still restores them in a rebuild (without their
// expiry, which the record does not keep: the retention sweep sets it).
func recordSignals(raw string) string {
	var r struct {
		Sig []string `json:"sig"`
	}
	if json.Unmarshal([]byte(raw), &r) != nil {
		return ""
	}
	out := make([]string, 0, len(r.Sig))
	for _, key := range r.Sig {
		if i := strings.LastIndex(key, ":sig:"); i >= 0 {
			out = append(out, key[i+len(":sig:"):])
		}
	}
	return strings.Join(out, " ")
}
