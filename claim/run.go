package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// RunConfig tunes Run.
type RunConfig struct {
	// Sales lists the events whose buckets are looked after.
	Sales func() []Sale
	// SweepEvery is how often outboxes and pending transfers are scanned.
	//
	// Default: 2s
	SweepEvery time.Duration
	// OrphanAge is how old an outbox entry or a pending transfer must be
	// before the sweeper completes it: younger ones belong to a request
	// still in flight.
	//
	// Default: 5s
	OrphanAge time.Duration
	// ExpireEvery is how often unconfirmed claims past their deadline are
	// released.
	//
	// Default: 1s
	ExpireEvery time.Duration
	// ExpireBatch bounds the claims released per bucket per tick.
	//
	// Default: 200
	ExpireBatch int
	// ReconcileEvery is how often the grants in Redis are compared with
	// the order stream (only with WithStream).
	//
	// Default: 5s
	ReconcileEvery time.Duration
	// OnError receives errors of the background work.
	OnError func(error)
}

func (c *RunConfig) defaults() {
	if c.SweepEvery <= 0 {
		c.SweepEvery = 2 * time.Second
	}
	if c.OrphanAge <= 0 {
		c.OrphanAge = 5 * time.Second
	}
	if c.ExpireEvery <= 0 {
		c.ExpireEvery = time.Second
	}
	if c.ExpireBatch <= 0 {
		c.ExpireBatch = 200
	}
	if c.ReconcileEvery <= 0 {
		c.ReconcileEvery = 5 * time.Second
	}
	if c.OnError == nil {
		c.OnError = func(error) {}
	}
	if c.Sales == nil {
		c.Sales = func() []Sale { return nil }
	}
}

// Run does the Service's background work until ctx is done: it removes
// acknowledged entries from the outboxes in batches, republishes orphaned
// ones, completes orphaned stock transfers, expires unconfirmed claims and,
// with WithStream, reconciles Redis with the order stream. Then it flushes
// what is acknowledged and returns. Every tick's work is bounded.
func (s *Service) Run(ctx context.Context, cfg RunConfig) error {
	cfg.defaults()
	sweep := time.NewTicker(cfg.SweepEvery)
	defer sweep.Stop()
	expire := time.NewTicker(cfg.ExpireEvery)
	defer expire.Stop()
	reconcile := time.NewTicker(cfg.ReconcileEvery)
	defer reconcile.Stop()
	flush := time.NewTicker(20 * time.Millisecond)
	defer flush.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			s.flush(fctx, cfg.OnError)
			cancel()
			return nil
		case <-flush.C:
			s.flush(ctx, cfg.OnError)
		case <-sweep.C:
			for _, sale := range cfg.Sales() {
				s.sweep(ctx, sale, cfg.OrphanAge, cfg.OnError)
				if _, err := s.recoverTransfers(ctx, sale, cfg.OrphanAge); err != nil {
					cfg.OnError(err)
				}
			}
		case <-expire.C:
			for _, sale := range cfg.Sales() {
				if _, err := s.expire(ctx, sale, cfg.ExpireBatch); err != nil {
					cfg.OnError(err)
				}
			}
		case <-reconcile.C:
			if s.js == nil {
				continue
			}
			for _, sale := range cfg.Sales() {
				if _, err := s.Reconcile(ctx, sale, reconcileMax); err != nil {
					cfg.OnError(err)
				}
			}
		}
	}
}

func (s *Service) flush(ctx context.Context, onErr func(error)) {
	s.mu.Lock()
	batch := s.acked
	if len(batch) == 0 {
		s.mu.Unlock()
		return
	}
	s.acked = map[boxRef][]string{}
	s.mu.Unlock()
	for ref, ids := range batch {
		if err := s.store.unbox(ctx, ref.ev, ref.b, ids); err != nil {
			onErr(err)
		}
	}
}

// sweep republishes outbox entries older than age and removes them once
// acknowledged.
func (s *Service) sweep(ctx context.Context, sale Sale, age time.Duration, onErr func(error)) {
	for b := range sale.Buckets {
		if _, err := s.publishOutbox(ctx, sale.ID, b, age); err != nil {
			onErr(err)
			return
		}
	}
}

// publishOutbox publishes the entries of bucket b's outbox at least age
// old (every entry when age is 0, whatever clock wrote it), removes the
// acknowledged ones, and returns them. A grant the fence finds superseded
// (ErrSuperseded: this server's stock was replaced by a rebuild elsewhere)
// stays in the outbox, so that a replay of it is refused too; such
// grants are reported as one error wrapping ErrSuperseded.
func (s *Service) publishOutbox(ctx context.Context, ev string, b int, age time.Duration) ([]OrderEvent, error) {
	entries, err := s.store.outboxEntries(ctx, ev, b)
	if err != nil {
		return nil, err
	}
	var msgs []message
	for id, payload := range entries {
		var oe OrderEvent
		if err := json.Unmarshal([]byte(payload), &oe); err != nil {
			return nil, fmt.Errorf("outbox %s/%d: entry %s: %w", ev, b, id, err)
		}
		if age <= 0 || s.now().Sub(oe.At) >= age {
			msgs = append(msgs, message{id: id, payload: payload, ev: oe})
		}
	}
	errs := s.publishEach(ctx, ev, msgs)
	var ids []string
	var evs []OrderEvent
	var failed []error
	superseded := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ids, evs = append(ids, msgs[i].id), append(evs, msgs[i].ev)
		case errors.Is(err, ErrSuperseded):
			superseded++
		default:
			failed = append(failed, err)
		}
	}
	if superseded > 0 {
		failed = append(failed, fmt.Errorf("outbox %s/%d: %d grants stay unacknowledged: %w", ev, b, superseded, ErrSuperseded))
	}
	perr := errors.Join(failed...)
	if len(ids) > 0 {
		if err := s.store.unbox(ctx, ev, b, ids); err != nil && perr == nil {
			perr = err
		}
	}
	return evs, perr
}

// message is an order event to publish with Nats-Msg-Id id.
type message struct {
	id, payload string
	ev          OrderEvent
}

// publishGrant publishes a granted event through the fence.
func (s *Service) publishGrant(ctx context.Context, ev, id, payload string) error {
	return s.pub.PublishGrant(ctx, ev, id, []byte(payload))
}

// publishMany publishes msgs, up to 64 at a time, each with a bounded
// wait for its acknowledgement. done[i] reports whether msgs[i] was
// acknowledged; the error joins the failures.
func (s *Service) publishMany(ctx context.Context, ev string, msgs []message) (done []bool, err error) {
	errs := s.publishEach(ctx, ev, msgs)
	done = make([]bool, len(msgs))
	for i, e := range errs {
		done[i] = e == nil
	}
	return done, errors.Join(errs...)
}

// publishBucket publishes msgs, events of bucket b still in its outbox
// (released, order_cancelled with its notice: see publishEach), and marks
// the acknowledged ones for removal from the outbox.
func (s *Service) publishBucket(ctx context.Context, ev string, b int, msgs []message) error {
	done, err := s.publishMany(ctx, ev, msgs)
	for i, ok := range done {
		if ok {
			s.ack(boxRef{ev, b}, msgs[i].id)
		}
	}
	return err
}

// publishEach publishes msgs (granted events through the fence) and
// returns each one's error.
func (s *Service) publishEach(ctx context.Context, ev string, msgs []message) []error {
	errs := make([]error, len(msgs))
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i, m := range msgs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			switch m.ev.Type {
			case KindGranted:
				errs[i] = s.publishGrant(pctx, ev, m.id, m.payload)
			case KindCancelled:
				errs[i] = s.pub.Publish(pctx, Subject(ev, m.ev.Type), m.id, []byte(m.payload))
				if errs[i] == nil && s.notice != nil {
					errs[i] = s.cancelNotice(pctx, m.payload)
				}
			default:
				errs[i] = s.pub.Publish(pctx, Subject(ev, m.ev.Type), m.id, []byte(m.payload))
			}
		}()
	}
	wg.Wait()
	return errs
}

// recoverTransfers completes the transfers out of sale's buckets that are
// older than age: their donor crashed, or lost its connection, between the
// steps. It returns how many it completed.
func (s *Service) recoverTransfers(ctx context.Context, sale Sale, age time.Duration) (int, error) {
	n := 0
	cutoff := s.now().Add(-age).UnixMilli()
	for b := range sale.Buckets {
		ts, err := s.store.pendingTransfers(ctx, sale.ID, b)
		if err != nil {
			return n, err
		}
		for _, t := range ts {
			if t.AtMs > cutoff {
				continue
			}
			if err := s.store.complete(ctx, sale.ID, t); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// cancelNotice hands an order_cancelled event's payload to the notice.
func (s *Service) cancelNotice(ctx context.Context, payload string) error {
	var oe OrderEvent
	if err := json.Unmarshal([]byte(payload), &oe); err != nil {
		return fmt.Errorf("cancel notice: %w", err)
	}
	return s.notice(ctx, oe)
}
