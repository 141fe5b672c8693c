package claim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Cancellation: staff cancel granted claims (pending or confirmed) that a
// sweep found sharing signals, with a reason, choosing whether each unit
// goes back to the stock (Restock) or stays sold and void. cancel.lua on
// the claims' home bucket decides for all of that bucket's claims at
// once, all or nothing: records cancelled, expiry entries gone, stats
// cancelled (and restocked) counted, stock+1 per restocked unit, and one
// order_cancelled event per claim in the outbox (Nats-Msg-Id "<claim
// id>:cancelled"), published like a release and republished by the
// sweeper when a node dies between the steps. A claim cancelled before,
// released, or unknown refuses the whole request before anything changes
// (ErrNotCancellable).
//
// A cancelled claim keeps counting against its user's per-user limit and
// its signals' limits for the rest of the sale: the point of a sweep is a
// ring of accounts, and giving them their slots back would let them buy
// the restocked units again. Stock accounting: units on sale = remaining
// + parked + granted − released − restocked; rebuild and reconcile count
// the order_cancelled events the same way.

// Errors of a cancellation.
var (
	// ErrNotCancellable is returned (in a *CancelError naming the claims)
	// when a claim to cancel is unknown, released or cancelled already;
	// nothing was cancelled.
	ErrNotCancellable = errors.New("claim: not cancellable")
	// ErrCancelled means a claim was cancelled by staff and cannot be
	// released.
	ErrCancelled = errors.New("claim: cancelled claims cannot be released")
)

// CancelError names the claims that refused a cancellation and why.
type CancelError struct {
	// IDs are the refused claims; Why says for each (same order):
	// unknown, released or cancelled.
	IDs, Why []string
}

// Error lists the refused claims.
func (e *CancelError) Error() string {
	parts := make([]string, len(e.IDs))
	for i := range e.IDs {
		parts[i] = e.IDs[i] + " (" + e.Why[i] + ")"
	}
	return ErrNotCancellable.Error() + ": " + strings.Join(parts, ", ")
}

// Unwrap makes errors.Is(err, ErrNotCancellable) true.
func (e *CancelError) Unwrap() error { return ErrNotCancellable }

// Cancellation is what staff ask to cancel.
type Cancellation struct {
	// IDs are the claims (at most MaxCancel, duplicates counted once).
	IDs []string
	// Reason is required: 1 to MaxReasonLen characters, no control
	// characters. The report counts cancellations by it.
	Reason string
	// Restock returns each claim's unit to the stock (the caller decides
	// whether the sale still sells); false keeps it sold and void.
	Restock bool
	// By names the staff member, for the order event.
	By string
}

// Limits of a cancellation.
const (
	MaxCancel    = 1000
	MaxReasonLen = 200
)

// ErrBadCancellation is returned for a cancellation without claims, with
// too many, or without a valid reason; nothing changes.
var ErrBadCancellation = errors.New("claim: a cancellation needs 1 to 1000 claim ids and a reason of 1 to 200 characters without control characters")

// Check validates c and returns its ids deduplicated.
func (c Cancellation) Check() ([]string, error) {
	ids := slices.Clone(c.IDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	r := strings.TrimSpace(c.Reason)
	if len(ids) == 0 || len(ids) > MaxCancel || r == "" || utf8.RuneCountInString(r) > MaxReasonLen || !utf8.ValidString(r) ||
		strings.ContainsFunc(r, unicode.IsControl) {
		return nil, ErrBadCancellation
	}
	for _, id := range ids {
		if _, err := ParseClaimID(id); err != nil {
			return nil, &CancelError{IDs: []string{id}, Why: []string{"unknown"}}
		}
	}
	return ids, nil
}

// Reply codes of cancel.lua, per claim.
const (
	cancelledNow     = 0
	cancelNotFound   = 1
	cancelReleased   = 2
	cancelledBefore  = 3
	cancelNotDone    = 4
	cancelFrozen     = 5
	cancelStale      = 6
	cancelUnwritable = 7
)

// Cancel cancels the claims of c in sale: it checks every claim first
// (any unknown, released or cancelled one refuses the whole request:
// *CancelError, errors.Is ErrNotCancellable, nothing changed), then runs
// cancel.lua per home bucket, all or nothing within a bucket, and
// publishes the order_cancelled events before it returns. It returns the
// cancelled records. Across buckets a claim changed between the check and
// its bucket's script refuses that bucket only (the error says which;
// those cancelled before stay cancelled, their events published). Other
// errors: ErrBadCancellation, ErrPaused, ErrNeedsRebuild, ErrUnavailable
// (the cancellations are done; their events stay in the outbox until the
// sweeper publishes them).
func (s *Service) Cancel(ctx context.Context, sale Sale, c Cancellation) ([]Record, error) {
	ids, err := c.Check()
	if err != nil {
		return nil, err
	}
	c.Reason = strings.TrimSpace(c.Reason)
	byBucket := map[int][]string{}
	var bad CancelError
	for _, id := range ids {
		rec, err := s.store.Lookup(ctx, sale.ID, id)
		b, _ := ParseClaimID(id)
		switch {
		case errors.Is(err, ErrNotFound) || b >= sale.Buckets:
			bad.IDs, bad.Why = append(bad.IDs, id), append(bad.Why, "unknown")
		case err != nil:
			return nil, err
		case rec.Status == StatusReleased || rec.Status == StatusCancelled:
			bad.IDs, bad.Why = append(bad.IDs, id), append(bad.Why, string(rec.Status))
		default:
			byBucket[b] = append(byBucket[b], id)
		}
	}
	if len(bad.IDs) > 0 {
		return nil, &bad
	}
	buckets := make([]int, 0, len(byBucket))
	for b := range byBucket {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	var errs []error
	done := make([]string, 0, len(ids))
	for _, b := range buckets {
		out, err := s.store.cancel(ctx, sale.ID, b, c, s.now(), byBucket[b])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var msgs []message
		for i, o := range out {
			id := byBucket[b][i]
			switch o.code {
			case cancelledNow:
				msgs = append(msgs, message{id: id + ":cancelled", payload: o.payload, ev: OrderEvent{Type: KindCancelled}})
				done = append(done, id)
			case cancelNotFound:
				bad.IDs, bad.Why = append(bad.IDs, id), append(bad.Why, "unknown")
			case cancelReleased:
				bad.IDs, bad.Why = append(bad.IDs, id), append(bad.Why, "released")
			case cancelledBefore:
				bad.IDs, bad.Why = append(bad.IDs, id), append(bad.Why, "cancelled")
			case cancelNotDone:
			case cancelFrozen:
				errs = append(errs, ErrPaused)
			case cancelStale:
				errs = append(errs, ErrNeedsRebuild)
			default:
				errs = append(errs, fmt.Errorf("cancel %s: its record cannot be rewritten (code %d): not cancelled", id, o.code))
			}
		}
		if err := s.publishBucket(ctx, sale.ID, b, msgs); err != nil {
			errs = append(errs, err)
		}
	}
	if len(bad.IDs) > 0 {
		errs = append(errs, &bad)
	}
	recs := make([]Record, 0, len(done))
	for _, id := range done {
		rec, err := s.store.Lookup(ctx, sale.ID, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		recs = append(recs, rec)
	}
	return recs, errors.Join(dedupe(errs)...)
}

// dedupe drops repeated sentinel errors (a frozen bucket answers for each
// of its claims).
func dedupe(errs []error) []error {
	out := errs[:0]
	for _, e := range errs {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

type cancelOutcome struct {
	code    int64
	status  Status
	payload string
}

// cancel runs cancel.lua on bucket b for ids.
func (s *Store) cancel(ctx context.Context, ev string, b int, c Cancellation, at time.Time, ids []string) ([]cancelOutcome, error) {
	k := bucketOf(ev, b)
	restock := 0
	if c.Restock {
		restock = 1
	}
	args := []any{ev, at.UTC().Format(time.RFC3339Nano), c.Reason, restock, c.By}
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := s.lua.cancel.Run(ctx, s.rdb, k.stockKeys(0), args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("cancel %s/%d: %w", ev, b, err)
	}
	if len(res) != 3*len(ids) {
		return nil, fmt.Errorf("cancel %s/%d: %d replies for %d claims", ev, b, len(res), len(ids))
	}
	f := fields(fmt.Sprintf("cancel %s/%d", ev, b), res)
	out := make([]cancelOutcome, len(ids))
	for i := range out {
		out[i].code = f.code(3*i, cancelledNow, cancelUnwritable)
		out[i].status = Status(f.str(3*i + 1))
		out[i].payload = f.str(3*i + 2)
	}
	if f.err != nil {
		return nil, f.err
	}
	return out, nil
}

// WithCancelNotice calls notice with each order_cancelled event after
// JetStream stored it, from Cancel and from the outbox sweeper alike; the
// outbox entry is removed only once notice returned nil too, so a node
// that dies between the two publishes leaves the sweeper to finish. The
// node publishes the sale's signed webhook (lifecycle order_cancelled)
// with it; notice must be idempotent (a Nats-Msg-Id of its own).
func WithCancelNotice(notice func(ctx context.Context, e OrderEvent) error) Option {
	return func(s *Service) { s.notice = notice }
}
