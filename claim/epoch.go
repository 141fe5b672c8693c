package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/jsretry"
)

// stream looks the order stream up, through a leader election.
func stream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	return jsretry.Value(ctx, func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, StreamName) })
}

// ErrSuperseded means a grant was decided on a Redis server whose stock a
// rebuild has since replaced (a partitioned old primary, or a publish that
// waited in the NATS client's buffer past the rebuild's read of the
// stream): the rebuild did not count it, so it is never acknowledged. It
// wraps ErrPaused: the client retries with the same idempotency key, on
// the rebuilt stock.
var ErrSuperseded = fmt.Errorf("%w: the grant was decided on stock a rebuild has replaced", ErrPaused)

// EpochSubject is the subject of event ev's epoch markers: a rebuild
// publishes one before it reads the stream, and each bucket it rewrites
// records the marker's stream sequence as its epoch.
func EpochSubject(ev string) string { return "anteroom.epochs." + ev }

// firstMarkerAfter returns the stream sequence of event ev's first epoch
// marker after sequence epoch, or 0 when there is none.
func firstMarkerAfter(ctx context.Context, st jetstream.Stream, ev string, epoch uint64) (uint64, error) {
	m, err := jsretry.Value(ctx, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return st.GetMsg(ctx, epoch+1, jetstream.WithGetMsgSubject(EpochSubject(ev)))
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("epoch markers of %s: %w", ev, err)
	}
	return m.Sequence, nil
}

// ended is the fence rule, the same for the publisher, the order worker
// and the rebuild: a grant decided in epoch (its bucket's marker sequence)
// and stored at stream sequence seq is void when the first marker after
// its epoch came before it — the rebuild that published that marker read
// the stream without it.
func ended(firstAfter, seq uint64) bool { return firstAfter != 0 && firstAfter < seq }

// streamHandle caches the order stream's handle (one lookup).
type streamHandle struct {
	js jetstream.JetStream
	mu sync.Mutex
	st jetstream.Stream
}

func (h *streamHandle) get(ctx context.Context) (jetstream.Stream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.st != nil {
		return h.st, nil
	}
	st, err := stream(ctx, h.js)
	if err != nil {
		return nil, fmt.Errorf("order stream: %w", err)
	}
	h.st = st
	return st, nil
}

// PublishGrant publishes a granted order event like Publish, then applies
// the fence: when an epoch marker of event ev lies between the grant's
// epoch and its stream sequence, it returns ErrSuperseded — the grant is
// on the stream but void (the order worker records it so, and rebuilds
// ignore it), and must never be acknowledged to the client.
func (p *Publisher) PublishGrant(ctx context.Context, ev, id string, payload []byte) error {
	seq, err := p.publish(ctx, Subject(ev, KindGranted), id, payload)
	if err != nil {
		return err
	}
	epoch := epochOf(payload)
	if v := p.view.Load(); v != nil {
		wait := viewWait
		if p.viewWait > 0 {
			wait = p.viewWait
		}
		first, err := v.firstAfter(ctx, p.stream.get, ev, epoch, seq, wait)
		if err == nil {
			return judged(id, seq, first)
		}
		if !errors.Is(err, errViewBehind) {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	// Usually no marker follows the grant's epoch: one shared read of the
	// latest marker shows it. Otherwise, look at the first one after it.
	last, err := p.markers.latest(ctx, ev)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if last <= epoch {
		return nil
	}
	st, err := p.stream.get(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	first, err := firstMarkerAfter(ctx, st, ev, epoch)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return judged(id, seq, first)
}

// judged applies the fence rule to grant id stored at seq, first being the
// first marker after its epoch.
func judged(id string, seq, first uint64) error {
	if ended(first, seq) {
		return fmt.Errorf("grant %s at stream sequence %d, after epoch marker %d: %w", id, seq, first, ErrSuperseded)
	}
	return nil
}

// Follow keeps the publisher's local view of the epoch markers, fed by an
// ordered consumer of the order stream (headers only, granted events and
// markers), until ctx ends; it restarts the view when it cannot start it,
// reporting why to onError (may be nil).
// While it runs, PublishGrant judges a grant from the view once the view
// has reached the grant's stream sequence — no JetStream request per
// grant — and reads the stream as before when the view lags by more than
// half a second. Without Follow, every grant's check reads the stream
// (one shared request per round trip under load): the right choice where
// direct gets answer that read cheaply (DirectGets).
func (p *Publisher) Follow(ctx context.Context, onError func(error)) {
	defer p.view.Store(nil)
	for ctx.Err() == nil {
		if err := followView(ctx, p.js, p.holdView, p.view.Store); err != nil && onError != nil {
			onError(err)
		}
		p.view.Store(nil)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// marker is the payload of an epoch marker.
type marker struct {
	Event string    `json:"event"`
	At    time.Time `json:"at"`
}

// publishMarker publishes an epoch marker for event ev and returns its
// stream sequence. It is sent again through a leader election: every try
// carries the same Nats-Msg-Id, so the stream stores one marker, and a
// try after a lost acknowledgement is answered with the stored one's
// sequence (the retries end well within DuplicateWindow).
func publishMarker(ctx context.Context, js jetstream.JetStream, ev string, at time.Time) (uint64, error) {
	raw, _ := json.Marshal(marker{Event: ev, At: at.UTC()}) // a plain struct: cannot fail
	id := ev + ":epoch:" + strconv.FormatInt(at.UnixNano(), 10)
	ack, err := jsretry.Value(ctx, func(ctx context.Context) (*jetstream.PubAck, error) {
		msg := &nats.Msg{Subject: EpochSubject(ev), Data: raw, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, id)
		return js.PublishMsg(ctx, msg)
	})
	if err != nil {
		return 0, fmt.Errorf("epoch marker of %s: %w", ev, err)
	}
	return ack.Sequence, nil
}

// readMarkers returns the stream sequences of event ev's epoch markers, in
// order.
func readMarkers(ctx context.Context, st jetstream.Stream, ev string) ([]uint64, error) {
	var out []uint64
	for seq := uint64(0); len(out) < 1_000_000; {
		next, err := firstMarkerAfter(ctx, st, ev, seq)
		if err != nil || next == 0 {
			return out, err
		}
		out = append(out, next)
		seq = next
	}
	return out, errors.New("too many epoch markers")
}

// firstAfterIn is firstMarkerAfter over the sorted markers.
func firstAfterIn(markers []uint64, epoch uint64) uint64 {
	for _, m := range markers {
		if m > epoch {
			return m
		}
	}
	return 0
}

// CountedEvents returns the order events of event ev on the stream, as
// ReadEvents does, less what the fence voids: granted events stored after
// an epoch marker ended their epoch (never acknowledged; see PublishGrant),
// and released and order_cancelled events of claims with no counted grant.
// Audits count these.
func CountedEvents(ctx context.Context, js jetstream.JetStream, ev string) ([]OrderEvent, error) {
	evs, err := ReadEvents(ctx, js, ev)
	if err != nil {
		return nil, err
	}
	st, err := stream(ctx, js)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ev, err)
	}
	markers, err := readMarkers(ctx, st, ev)
	if err != nil {
		return nil, err
	}
	counted := map[string]bool{}
	out := make([]OrderEvent, 0, len(evs))
	for _, e := range evs {
		if e.Type == KindGranted {
			if ended(firstAfterIn(markers, e.Epoch), e.Seq) {
				continue
			}
			counted[e.ClaimID] = true
		}
		out = append(out, e)
	}
	kept := out[:0]
	for _, e := range out {
		if e.Type == KindGranted || counted[e.ClaimID] {
			kept = append(kept, e)
		}
	}
	return kept, nil
}
