package claim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/jsretry"
)

// markerLanes coalesce the publisher's reads of an event's latest epoch
// marker: a grant needs a reading taken after its PubAck, so callers join
// the next read, which starts when the one in flight ends. Under load, one
// JetStream request per round trip serves every grant acknowledged
// meanwhile, instead of one per grant.
type markerLanes struct {
	stream *streamHandle
	mu     sync.Mutex
	m      map[string]*markerLane
}

type markerLane struct {
	busy bool
	next *markerRead // the read that starts when the one in flight ends
}

type markerRead struct {
	done chan struct{}
	last uint64
	err  error
}

// latest returns the stream sequence of event ev's latest epoch marker (0
// when it has none), read after the call began.
func (l *markerLanes) latest(ctx context.Context, ev string) (uint64, error) {
	l.mu.Lock()
	ln := l.m[ev]
	if ln == nil {
		ln = &markerLane{}
		l.m[ev] = ln
	}
	r := ln.next
	if r == nil {
		r = &markerRead{done: make(chan struct{})}
		ln.next = r
	}
	if !ln.busy {
		ln.busy, ln.next = true, nil
		go l.run(ev, ln, r)
	}
	l.mu.Unlock()
	select {
	case <-r.done:
		return r.last, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// run performs r, then the reads queued meanwhile, until none is left.
func (l *markerLanes) run(ev string, ln *markerLane, r *markerRead) {
	for r != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r.last, r.err = l.read(ctx, ev)
		cancel()
		close(r.done)
		l.mu.Lock()
		r, ln.next = ln.next, nil
		if r == nil {
			ln.busy = false
		}
		l.mu.Unlock()
	}
}

func (l *markerLanes) read(ctx context.Context, ev string) (uint64, error) {
	st, err := l.stream.get(ctx)
	if err != nil {
		return 0, err
	}
	m, err := jsretry.Value(ctx, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return st.GetLastMsgForSubject(ctx, EpochSubject(ev))
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("epoch markers of %s: %w", ev, err)
	}
	return m.Sequence, nil
}
