package claim

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Request is one claim by an admitted user.
type Request struct {
	Event string
	User  string
	// Pos is the admitted queue position, recorded with the claim.
	Pos int64
	// IdemKey identifies the request: the same key returns the same claim.
	IdemKey string
	// Limit is the event's per-user limit; Buckets its bucket count.
	Limit   int64
	Buckets int
	// IdemTTL is how long the idempotency key is remembered.
	IdemTTL time.Duration
}

// Result is a granted claim, new or replayed.
type Result struct {
	ClaimID string
	Status  string
	// Replay is true when the request repeats an earlier one.
	Replay bool
}

// publisher is what the Service needs from JetStream.
type publisher interface {
	Publish(ctx context.Context, subject, id string, payload []byte) error
}

// Service runs claims end to end: the atomic script, then the order event on
// JetStream, then the answer. Run must be running for acknowledged entries to
// leave the outbox and for orphaned entries to be republished. It is safe for
// concurrent use.
type Service struct {
	store *Store
	pub   publisher
	now   func() time.Time

	mu    sync.Mutex
	acked map[boxRef][]string
	kick  chan struct{}
}

type boxRef struct {
	ev string
	b  int
}

// NewService returns a Service.
func NewService(store *Store, pub publisher) *Service {
	return &Service{store: store, pub: pub, now: time.Now, acked: map[boxRef][]string{}, kick: make(chan struct{}, 1)}
}

// Claim grants r.User one unit of r.Event, or returns ErrSoldOut, a
// *LimitError (errors.Is ErrLimitReached), or an error wrapping
// ErrUnavailable when the order event could not be acknowledged — the grant
// then stays in the outbox and a retry with the same idempotency key
// returns it.
func (s *Service) Claim(ctx context.Context, r Request) (Result, error) {
	b := HomeBucket(r.User, r.Buckets)
	res, err := s.store.run(ctx, request{
		Event: r.Event, User: r.User, IdemKey: r.IdemKey, Pos: r.Pos, Limit: r.Limit,
		Bucket: b, IdemTTL: r.IdemTTL, Now: s.now(),
	})
	if err != nil {
		return Result{}, err
	}
	if res.Payload != "" {
		if err := s.pub.Publish(ctx, Subject(r.Event, "granted"), res.ClaimID, []byte(res.Payload)); err != nil {
			return Result{}, err
		}
		s.ack(boxRef{r.Event, b}, res.ClaimID)
	}
	return Result{ClaimID: res.ClaimID, Status: res.Status, Replay: res.Replay}, nil
}

func (s *Service) ack(ref boxRef, id string) {
	s.mu.Lock()
	s.acked[ref] = append(s.acked[ref], id)
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Sale names an event and its bucket count, for the sweeper.
type Sale struct {
	ID      string
	Buckets int
}

// RunConfig tunes Run.
type RunConfig struct {
	// Sales lists the events whose outboxes are swept.
	Sales func() []Sale
	// SweepEvery is how often outboxes are scanned.
	//
	// Default: 2s
	SweepEvery time.Duration
	// OrphanAge is how old an outbox entry must be before the sweeper
	// republishes it.
	//
	// Default: 5s
	OrphanAge time.Duration
	// OnError receives errors of the background work.
	OnError func(error)
}

// Run removes acknowledged entries from the outboxes in batches and
// republishes orphaned ones, until ctx is done; then it flushes what is
// acknowledged and returns.
func (s *Service) Run(ctx context.Context, cfg RunConfig) error {
	if cfg.SweepEvery == 0 {
		cfg.SweepEvery = 2 * time.Second
	}
	if cfg.OrphanAge == 0 {
		cfg.OrphanAge = 5 * time.Second
	}
	if cfg.OnError == nil {
		cfg.OnError = func(error) {}
	}
	sweep := time.NewTicker(cfg.SweepEvery)
	defer sweep.Stop()
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
			if cfg.Sales != nil {
				for _, sale := range cfg.Sales() {
					s.sweep(ctx, sale, cfg.OrphanAge, cfg.OnError)
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
		entries, err := s.store.outboxEntries(ctx, sale.ID, b)
		if err != nil {
			onErr(err)
			return
		}
		var done []string
		for id, payload := range entries {
			var ev OrderEvent
			if err := json.Unmarshal([]byte(payload), &ev); err != nil {
				onErr(err)
				continue
			}
			if s.now().Sub(ev.At) < age {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := s.pub.Publish(pctx, Subject(sale.ID, ev.Type), id, []byte(payload))
			cancel()
			if err != nil {
				onErr(err)
				return
			}
			done = append(done, id)
		}
		if len(done) > 0 {
			if err := s.store.unbox(ctx, sale.ID, b, done); err != nil {
				onErr(err)
			}
		}
	}
}
