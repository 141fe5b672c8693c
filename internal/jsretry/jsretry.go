// Package jsretry rides out a JetStream leader election: it calls a
// JetStream API request again, with a bounded backoff, when it failed the
// way a request fails while a NATS cluster elects a meta, stream or
// consumer leader (no responders, a timeout, "JetStream system temporarily
// unavailable", a stream or consumer offline). Any other error, or the
// caller's context ending, ends it at once.
//
// Use it for reads and for requests that are idempotent (stream and
// consumer create-or-update, info, message gets). A publish is retried
// only when it carries a Nats-Msg-Id, so that the stream stores one copy
// however many times it is sent (the retries end well within the
// stream's duplicate window); a claim's own publish is never retried
// here: its client retries with the same idempotency key.
//
// Its functions are safe for concurrent use.
package jsretry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/wait"
)

// Budget bounds the retries of one call: no try starts once this long
// has passed since the first. An election after a leader stops takes the
// raft's election timeout (4–9 s at the server's defaults) plus a vote;
// a step-down takes well under a second.
const Budget = 15 * time.Second

// Try bounds each try of Do and Value: a request sent to a leader that
// has just stepped down goes unanswered, and the next try asks the new
// one. It is nats.go's own default API timeout.
const Try = 5 * time.Second

// policy is the budget, per-try bound and backoff; tests shrink them.
type policy struct {
	budget, try, first, most time.Duration
}

var std = policy{budget: Budget, try: Try, first: 100 * time.Millisecond, most: time.Second}

// JetStream API error codes of a cluster between leaders.
const (
	codeNotAvailable    = 10008 // JetStream system temporarily unavailable
	codeNotLeader       = 10009 // JetStream cluster can not handle request
	codeStreamOffline   = 10118
	codeConsumerOffline = 10119
)

// Transient reports whether err is how a JetStream request fails while a
// leader is being elected, so that asking again shortly can succeed: no
// responders (a publish reports them as "no response from stream"), a
// timeout of the request (not of the caller's context: see Do), a consumer's leadership change, and API errors with code 10008
// (temporarily unavailable), 10009 (not leader), 10118/10119 (stream or
// consumer offline) or HTTP status 503.
func Transient(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, jetstream.ErrConsumerLeadershipChanged), errors.Is(err, jetstream.ErrNoHeartbeat):
		return true
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return electing(int(api.ErrorCode), api.Code)
	}
	// The legacy API (which makes a key-value watch's consumer) has an
	// APIError of its own.
	var legacy *nats.APIError
	if errors.As(err, &legacy) {
		return electing(int(legacy.ErrorCode), legacy.Code)
	}
	return false
}

// electing reports whether an API error's code and HTTP status are those
// of a cluster between leaders.
func electing(code, status int) bool {
	switch code {
	case codeNotAvailable, codeNotLeader, codeStreamOffline, codeConsumerOffline:
		return true
	}
	return status == 503
}

// Do calls f until it returns nil or an error that is not Transient, ctx
// ends, or Budget has passed, and returns f's last error. Each try gets
// ctx bounded by Try; a try that ran out of that bound (while ctx itself
// lives) counts as transient.
func Do(ctx context.Context, f func(context.Context) error) error {
	_, err := Value(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}

// Value is Do for a call that returns a value: the value of the try that
// succeeded.
func Value[T any](ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	return value(ctx, std, f)
}

func value[T any](ctx context.Context, p policy, f func(context.Context) (T, error)) (T, error) {
	r := p.start()
	for {
		tctx, cancel := context.WithTimeout(ctx, p.try)
		v, err := f(tctx)
		timedOut := tctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return v, nil
		}
		if timedOut && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (one try's bound): %w", nats.ErrTimeout, err)
		}
		if !r.again(ctx, err) {
			return v, err
		}
	}
}

// Retry is the retry state of a loop that cannot hand its tries to Do
// (a fetch that resumes where the last one stopped). The zero value is
// not usable: start one with Start.
type Retry struct {
	p     policy
	start time.Time
	pause time.Duration
}

// Start starts the retries of one call.
func Start() *Retry { return std.start() }

func (p policy) start() *Retry { return &Retry{p: p, start: time.Now(), pause: p.first} }

// Again reports whether to try again after err: err is Transient, ctx
// lives and the budget has not run out. It waits the backoff (doubling
// up to a second) before it reports true.
func (r *Retry) Again(ctx context.Context, err error) bool { return r.again(ctx, err) }

func (r *Retry) again(ctx context.Context, err error) bool {
	if !Transient(err) || ctx.Err() != nil || time.Since(r.start)+r.pause > r.p.budget {
		return false
	}
	ok := wait.Sleep(ctx, r.pause)
	r.pause = min(2*r.pause, r.p.most)
	return ok
}
