package claim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/jsretry"
)

// markerView is a publisher's local view of the epoch markers, so that the
// fence costs no JetStream request per grant on a replicated stream. An
// ordered consumer delivers, headers only and in stream order, every
// granted event and every marker stored after the view started (from). It
// is gapless (the client recreates it from the last delivered sequence
// after any gap), so once it has delivered stream sequence upTo the view
// holds every marker in (from, upTo]. A grant acknowledged at sequence seq
// is judged once upTo ≥ seq — its own delivery brings that about, at about
// the time its PubAck arrives; markers at or before from are read from the
// stream once per (event, epoch) and kept (the stream only appends).
type markerView struct {
	from uint64
	hold func(jetstream.Msg) // a test's hook, before each delivery is recorded

	// delivering counts deliveries in progress. The ordered consumer
	// records a message as delivered before its handler runs, and a
	// consumer it recreates (missed heartbeats, a reconnect) starts after
	// that message on another goroutine: a second delivery while one is
	// in progress may overtake a marker that is not recorded yet.
	delivering atomic.Int32

	mu       sync.Mutex
	broken   chan struct{} // closed when the view lost its order: judge nothing from it
	consumer string        // the ordered consumer's name at the first delivery
	upTo     uint64
	moved    chan struct{}       // closed and replaced when upTo advances while waiting
	waiting  bool                // a grant waits on moved
	stale    bool                // a wait timed out and upTo has not moved since
	markers  map[string][]uint64 // event → its markers in (from, upTo], ascending
	past     map[pastKey]uint64  // first marker in (epoch, from], 0 for none
}

type pastKey struct {
	ev    string
	epoch uint64
}

// viewWait bounds how long a grant waits for the view to reach its stream
// sequence before the publisher reads the stream instead.
const viewWait = 500 * time.Millisecond

// maxPast bounds the kept reads of markers before the view started (a
// few per event: one per rebuild before it).
const maxPast = 4096

// followView starts a view at the order stream's end and feeds it until
// ctx ends; ready is called once it is started. hold, when not nil, runs
// before each delivery is recorded (a test's hook).
func followView(ctx context.Context, js jetstream.JetStream, hold func(jetstream.Msg), ready func(*markerView)) error {
	info, err := jsretry.Value(ctx, func(ctx context.Context) (*jetstream.StreamInfo, error) {
		st, err := js.Stream(ctx, StreamName)
		if err != nil {
			return nil, err
		}
		return st.Info(ctx)
	})
	if err != nil {
		return fmt.Errorf("marker view: %w", err)
	}
	v := newMarkerView(info.State.LastSeq, hold)
	c, err := jsretry.Value(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
		return js.OrderedConsumer(ctx, StreamName, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{Subject("*", KindGranted), EpochSubject("*")},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    v.from + 1,
			HeadersOnly:    true,
		})
	})
	if err != nil {
		return fmt.Errorf("marker view: %w", err)
	}
	cc, err := c.Consume(v.deliver)
	if err != nil {
		return fmt.Errorf("marker view: %w", err)
	}
	defer cc.Stop()
	ready(v)
	select {
	case <-ctx.Done():
		return nil
	case <-cc.Closed():
		return errors.New("marker view: the consumer stopped")
	case <-v.broken:
		return errors.New("marker view: a delivery overtook another (the consumer was recreated); starting again")
	}
}

// newMarkerView is a view that starts after stream sequence from.
func newMarkerView(from uint64, hold func(jetstream.Msg)) *markerView {
	return &markerView{from: from, hold: hold, upTo: from, moved: make(chan struct{}), broken: make(chan struct{}),
		markers: map[string][]uint64{}, past: map[pastKey]uint64{}}
}

// breakLocked marks the view as out of order: every grant waiting on it and
// every later one reads the stream instead, and followView starts a new
// view. v.mu must be held.
func (v *markerView) breakLocked() {
	select {
	case <-v.broken:
	default:
		close(v.broken)
	}
}

func (v *markerView) isBroken() bool {
	select {
	case <-v.broken:
		return true
	default:
		return false
	}
}

// deliver records one delivered message.
//
// Deliveries must come one at a time, in order, from one consumer: a
// delivery that starts while another is in progress, comes from a
// recreated consumer or is not past upTo breaks the view
// (a marker in flight could be overtaken and never recorded), and grants
// are judged by reading the stream until a new view starts.
func (v *markerView) deliver(m jetstream.Msg) {
	overlapped := v.delivering.Add(1) > 1
	defer v.delivering.Add(-1)
	if v.hold != nil {
		v.hold(m)
	}
	md, err := m.Metadata()
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil || overlapped || v.isBroken() {
		v.breakLocked()
		return
	}
	if v.consumer == "" {
		v.consumer = md.Consumer
	} else if md.Consumer != v.consumer {
		// The client recreated the consumer: its first delivery may have
		// overtaken the old consumer's last, still in a handler.
		v.breakLocked()
		return
	}
	seq := md.Sequence.Stream
	if seq <= v.upTo {
		v.breakLocked() // out of order: what came between may be missing
		return
	}
	if ev, ok := strings.CutPrefix(m.Subject(), EpochSubject("")); ok {
		v.markers[ev] = append(v.markers[ev], seq)
	}
	v.upTo, v.stale = seq, false
	if v.waiting {
		close(v.moved)
		v.moved, v.waiting = make(chan struct{}), false
	}
}

// errViewBehind means the view did not reach a grant's stream sequence in
// time: the caller reads the stream instead.
var errViewBehind = errors.New("marker view behind")

// firstAfter returns the first marker of event ev after epoch, as
// firstMarkerAfter would read it once the stream holds sequence seq, or
// errViewBehind when the view has not reached seq within wait.
func (v *markerView) firstAfter(ctx context.Context, st func(context.Context) (jetstream.Stream, error), ev string, epoch, seq uint64, wait time.Duration) (uint64, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	v.mu.Lock()
	for v.upTo < seq || v.isBroken() {
		if v.stale || v.isBroken() {
			v.mu.Unlock()
			return 0, errViewBehind // stalled: no grant waits for it until it moves
		}
		moved := v.moved
		v.waiting = true
		v.mu.Unlock()
		select {
		case <-moved:
		case <-v.broken:
		case <-timer.C:
			v.mu.Lock()
			v.stale = v.upTo < seq
			v.mu.Unlock()
			return 0, errViewBehind
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		v.mu.Lock()
	}
	marks := v.markers[ev]
	i, _ := slices.BinarySearch(marks, epoch+1)
	var recent uint64
	if i < len(marks) {
		recent = marks[i]
	}
	if epoch >= v.from {
		v.mu.Unlock()
		return recent, nil
	}
	first, known := v.past[pastKey{ev, epoch}]
	v.mu.Unlock()
	if !known {
		s, err := st(ctx)
		if err != nil {
			return 0, err
		}
		if first, err = firstMarkerAfter(ctx, s, ev, epoch); err != nil {
			return 0, err
		}
		if first > v.from {
			first = 0 // the view holds it
		}
		v.mu.Lock()
		if len(v.past) < maxPast {
			v.past[pastKey{ev, epoch}] = first
		}
		v.mu.Unlock()
	}
	if first != 0 {
		return first, nil
	}
	return recent, nil
}
