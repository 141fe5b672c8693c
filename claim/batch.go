package claim

import (
	"context"
	"sync"
	"time"
)

// lanes micro-batch concurrent claims per bucket: while one script call for
// a bucket is in flight, requests for that bucket queue; when it returns,
// the first queued request leads the next call, carrying up to max queued
// requests in one script run (group commit). An idle bucket adds no delay.
// claim.lua decides a batch's requests one after another exactly as if each
// ran alone, so batching changes the number of round trips, never an
// outcome.
type lanes struct {
	store   *Store
	max     int
	timeout time.Duration

	mu sync.Mutex
	m  map[laneKey]*lane
}

type laneKey struct {
	ev string
	b  int
}

type lane struct {
	mu    sync.Mutex
	queue []*waiter
	busy  bool
}

// waiter is one queued request and where its outcome goes. lead is set
// instead of res when the waiter must run the next batch itself.
type waiter struct {
	req  request
	done chan struct{}
	res  outcome
	err  error
	lead bool
}

func (l *lanes) lane(ev string, b int) *lane {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := laneKey{ev, b}
	ln := l.m[k]
	if ln == nil {
		ln = &lane{}
		l.m[k] = ln
	}
	return ln
}

// grant runs r on bucket b of ev, batched with concurrent requests for the
// same bucket. A queued request waits for its batch even when ctx ends
// first, since it may already be in flight; the wait is bounded by the
// leader's timeout.
func (l *lanes) grant(ctx context.Context, ev string, b int, r request) (outcome, error) {
	ln := l.lane(ev, b)
	w := &waiter{req: r, done: make(chan struct{})}
	ln.mu.Lock()
	ln.queue = append(ln.queue, w)
	if ln.busy {
		ln.mu.Unlock()
		<-w.done
		if !w.lead {
			return w.res, w.err
		}
	} else {
		ln.busy = true
		ln.mu.Unlock()
	}
	l.lead(ctx, ev, b, ln)
	return w.res, w.err
}

// lead runs one batch from the head of the queue (the leader is its first
// member), hands the results out, and passes leadership to the next queued
// request, if any.
func (l *lanes) lead(ctx context.Context, ev string, b int, ln *lane) {
	ln.mu.Lock()
	n := min(len(ln.queue), l.max)
	batch := ln.queue[:n:n]
	ln.queue = ln.queue[n:]
	ln.mu.Unlock()

	reqs := make([]request, len(batch))
	for i, w := range batch {
		reqs[i] = w.req
	}
	// The batch serves other callers too: it must not end with the
	// leader's context.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	res, err := l.store.grant(bctx, ev, b, reqs)
	cancel()
	for i, w := range batch {
		if err != nil {
			w.err = err
		} else {
			w.res = res[i]
		}
		if i > 0 {
			close(w.done)
		}
	}

	ln.mu.Lock()
	if len(ln.queue) == 0 {
		ln.busy = false
		ln.mu.Unlock()
		return
	}
	next := ln.queue[0]
	ln.mu.Unlock()
	next.lead = true
	close(next.done)
}
