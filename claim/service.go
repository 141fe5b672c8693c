package claim

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
	//
	// Default: 24h
	IdemTTL time.Duration
	// ClaimTTL is how long a granted claim may stay unconfirmed before it
	// expires and its unit returns to stock.
	//
	// Default: 15m
	ClaimTTL time.Duration
	// Signals are the claim's signal limits (signal.go), counted in the
	// same script call as the claim; their sets expire at SignalsUntil.
	//
	// Default: none
	Signals      []Signal
	SignalsUntil time.Time
}

// Result is a granted claim, new or replayed.
type Result struct {
	ClaimID string
	Status  Status
	// Replay is true when the request repeats an earlier one.
	Replay bool
}

// publisher is what the Service needs from JetStream: Publisher's
// Publish, and PublishGrant, which publishes a granted event through the
// failover fence (a wrapper must pass both through).
type publisher interface {
	Publish(ctx context.Context, subject, id string, payload []byte) error
	PublishGrant(ctx context.Context, ev, id string, payload []byte) error
}

// Service runs claims end to end: the atomic script (refilling the home
// bucket from others when it is empty), then the order event on JetStream,
// then the answer. Run must be running for acknowledged entries to leave the
// outbox, for orphaned entries and transfers to be completed, and for
// unconfirmed claims to expire. It is safe for concurrent use.
type Service struct {
	store    *Store
	pub      publisher
	now      func() time.Time
	lanes    *lanes // nil: no micro-batching
	view     func(ev string) []int64
	js       jetstream.JetStream
	stealMax int64
	// reconcileAge keeps reconciliation away from claims so young that
	// their own request may still be publishing them.
	reconcileAge time.Duration
	// notice follows each published order_cancelled event
	// (WithCancelNotice); nil: none.
	notice func(ctx context.Context, e OrderEvent) error

	mu      sync.Mutex
	acked   map[boxRef][]string
	soldOut map[string]time.Time // event → when a refill last found nothing
	kick    chan struct{}
}

// soldOutMemo is how long a refill that found every bucket empty answers
// for the event: at the end of a sale, admitted users who come too late
// then cost one script call each. Only a release can bring units back
// after a sell-out, and it is seen this much later at most.
const soldOutMemo = 100 * time.Millisecond

type boxRef struct {
	ev string
	b  int
}

// Option configures a Service.
type Option func(*Service)

// WithBatch micro-batches concurrent claims for one bucket into one script
// call of up to max requests (see lanes). max below 2 turns batching off.
//
// Default: off
func WithBatch(max int) Option {
	return func(s *Service) {
		s.lanes = nil
		if max >= 2 {
			s.lanes = &lanes{store: s.store, max: max, timeout: 3 * time.Second, m: map[laneKey]*lane{}}
		}
	}
}

// WithStockView gives the Service a recent reading of each bucket's stock
// (the node's snapshot, refreshed every tick), used to pick donor buckets
// without a round trip. Without it, or when the view is stale, a refill
// reads every bucket's stock.
func WithStockView(view func(ev string) []int64) Option {
	return func(s *Service) { s.view = view }
}

// WithStream lets Run compare the grants in Redis with the order stream
// every few seconds and republish what the stream is missing.
func WithStream(js jetstream.JetStream) Option {
	return func(s *Service) { s.js = js }
}

// WithClock sets the clock the service ages its outbox, reconciliation and
// transfers by, and stamps releases with (a node's clock.Clock).
//
// Default: time.Now
func WithClock(now func() time.Time) Option {
	return func(s *Service) { s.now = now }
}

// NewService returns a Service.
func NewService(store *Store, pub publisher, opts ...Option) *Service {
	s := &Service{store: store, pub: pub, now: time.Now, stealMax: 16, reconcileAge: 10 * time.Second, acked: map[boxRef][]string{},
		soldOut: map[string]time.Time{}, kick: make(chan struct{}, 1)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// maxRefills bounds how often one claim refills its empty home bucket
// before it gives up with a retryable error.
const maxRefills = 6

// Claim grants r.User one unit of r.Event, or returns ErrSoldOut, a
// *LimitError (errors.Is ErrLimitReached), a *SignalLimitError (errors.Is
// ErrSignalLimit), ErrPaused while a rebuild runs
// (or ErrSuperseded, which wraps it, for a grant decided on stock a rebuild
// replaced),
// or an error wrapping ErrUnavailable when the order event could not be
// acknowledged — the grant then stays in the outbox and a retry with the
// same idempotency key returns it.
func (s *Service) Claim(ctx context.Context, r Request) (Result, error) {
	if r.IdemTTL <= 0 {
		r.IdemTTL = DefaultIdemTTL
	}
	if r.ClaimTTL <= 0 {
		r.ClaimTTL = 15 * time.Minute
	}
	h := HomeBucket(r.User, r.Buckets)
	req := request{Event: r.Event, User: r.User, IdemKey: r.IdemKey, Pos: r.Pos, Limit: r.Limit,
		IdemTTL: r.IdemTTL, ClaimTTL: r.ClaimTTL, Now: s.now(), TraceID: traceID(ctx),
		Signals: r.Signals, SignalsUntil: r.SignalsUntil}
	if len(r.Signals) > 0 && r.SignalsUntil.IsZero() {
		req.SignalsUntil = req.Now.Add(DefaultIdemTTL)
	}
	soldOut := false
	for attempt := 0; ; attempt++ {
		o, err := s.grant(ctx, r.Event, h, req)
		if err != nil {
			return Result{}, err
		}
		switch o.code {
		case codeLimit:
			return Result{}, &LimitError{Held: o.held}
		case codeSignal:
			return Result{}, &SignalLimitError{Dim: o.dim}
		case codeFrozen:
			return Result{}, ErrPaused
		case codeStale:
			return Result{}, ErrNeedsRebuild
		case codeEmpty:
			if soldOut || r.Buckets <= 1 || s.recentlySoldOut(r.Event) {
				return Result{}, ErrSoldOut
			}
			if attempt == maxRefills {
				return Result{}, fmt.Errorf("%w: stock is moving between buckets", ErrUnavailable)
			}
			ok, err := s.refill(ctx, Sale{ID: r.Event, Buckets: r.Buckets}, h)
			if err != nil {
				return Result{}, err
			}
			// Sold out: look at h once more, since a concurrent twin of
			// this request may have been granted meanwhile (a replay).
			if soldOut = !ok; soldOut {
				s.mu.Lock()
				s.soldOut[r.Event] = s.now()
				s.mu.Unlock()
			}
			continue
		}
		if o.payload != "" {
			// Through the fence: a grant stored after a rebuild's epoch
			// marker ended its epoch is refused (ErrSuperseded), never
			// acknowledged, and stays in the outbox.
			if err := s.publishGrant(ctx, r.Event, o.claimID, o.payload); err != nil {
				return Result{}, err
			}
			s.ack(boxRef{r.Event, h}, o.claimID)
		}
		return Result{ClaimID: o.claimID, Status: o.status, Replay: o.code == codeReplay}, nil
	}
}

func (s *Service) recentlySoldOut(ev string) bool {
	s.mu.Lock()
	at, ok := s.soldOut[ev]
	s.mu.Unlock()
	return ok && s.now().Sub(at) < soldOutMemo
}

func (s *Service) grant(ctx context.Context, ev string, b int, r request) (outcome, error) {
	if s.lanes != nil {
		return s.lanes.grant(ctx, ev, b, r)
	}
	out, err := s.store.grant(ctx, ev, b, []request{r})
	if err != nil {
		return outcome{}, err
	}
	return out[0], nil
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

// wait sleeps for d or until ctx is done.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
