package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/internal/jsretry"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// StreamName is the JetStream stream that holds every order event.
const StreamName = "ANTEROOM_ORDERS"

// Subject returns the subject of an order event of kind ("granted",
// "released" or "order_cancelled") for event ev.
func Subject(ev string, kind Kind) string { return "anteroom.orders." + ev + "." + string(kind) }

// StreamConfig describes the order stream: limits retention, kept for 90
// days (well past any sale, so stock can be rebuilt from it), duplicates
// rejected within DuplicateWindow by Nats-Msg-Id. It holds the order events
// (anteroom.orders.<event>.granted|released|order_cancelled) and the rebuilds' epoch
// markers (anteroom.epochs.<event>).
func StreamConfig(replicas int, opts ...StreamOption) jetstream.StreamConfig {
	c := jetstream.StreamConfig{
		Name:       StreamName,
		Subjects:   []string{"anteroom.orders.>", "anteroom.epochs.>"},
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		MaxAge:     90 * 24 * time.Hour,
		Duplicates: DuplicateWindow,
		Replicas:   max(replicas, 1),
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// StreamOption adjusts the order stream's configuration.
type StreamOption func(*jetstream.StreamConfig)

// DirectGets lets a single-replica order stream answer reads of single
// messages itself (allow_direct): the fence's read of the latest epoch
// marker after every PubAck then costs no JetStream API request (JSON
// request and answer, the API's own goroutine) but a direct reply. Sound
// only where no other server can answer such a read: with one replica the
// stream is its own leader, and a read sent after a PubAck sees every
// message stored before it — unless a mirror with mirror_direct answers
// instead, which an operator may set up on a server of their own. So a
// node asks for it on its embedded server only (no one else attaches a
// mirror there); on a replicated stream it does nothing (followers would
// answer reads too, possibly behind the leader).
func DirectGets() StreamOption {
	return func(c *jetstream.StreamConfig) { c.AllowDirect = c.Replicas == 1 }
}

// DuplicateWindow is how long JetStream remembers a Nats-Msg-Id.
const DuplicateWindow = 2 * time.Minute

// EnsureStream creates or updates the order stream, through a leader
// election (internal/jsretry).
func EnsureStream(ctx context.Context, js jetstream.JetStream, replicas int, opts ...StreamOption) error {
	err := jsretry.Do(ctx, func(ctx context.Context) error {
		_, err := js.CreateOrUpdateStream(ctx, StreamConfig(replicas, opts...))
		return err
	})
	if err != nil {
		return fmt.Errorf("order stream: %w", err)
	}
	return nil
}

// Publisher publishes order events and waits for JetStream's
// acknowledgement. Publishes from concurrent callers share the connection
// and are acknowledged asynchronously, so they batch on the wire. It is safe
// for concurrent use.
type Publisher struct {
	js      jetstream.JetStream
	stream  *streamHandle
	markers *markerLanes
	view    atomic.Pointer[markerView] // set while Follow runs

	holdView func(jetstream.Msg) // a test's hook into the view's deliveries
	viewWait time.Duration       // a test's bound instead of viewWait, when set
}

// NewPublisher returns a Publisher on js.
func NewPublisher(js jetstream.JetStream) *Publisher {
	h := &streamHandle{js: js}
	return &Publisher{js: js, stream: h, markers: &markerLanes{stream: h, m: map[string]*markerLane{}}}
}

// Publish sends payload with Nats-Msg-Id = id to subject and returns once
// JetStream has stored it (or recognised it as a duplicate). Errors wrap
// ErrUnavailable. It sends once: a claim's client retries with the same
// idempotency key (the same Nats-Msg-Id), and the outbox republishes.
func (p *Publisher) Publish(ctx context.Context, subject, id string, payload []byte) error {
	_, err := p.publish(ctx, subject, id, payload)
	return err
}

// publish is Publish, returning the message's stream sequence (the first
// copy's, for a duplicate).
//
// Under a recording span (a traced claim) it spans the publish, from the
// call to the acknowledgement ("jetstream publish", kind producer), and
// within it the wait for the PubAck ("jetstream ack").
func (p *Publisher) publish(ctx context.Context, subject, id string, payload []byte) (seq uint64, err error) {
	ctx, span := childSpan(ctx, "jetstream publish", trace.SpanKindProducer)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("messaging.system", "nats"), attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", subject), attribute.String("messaging.message.id", id),
			attribute.Int("messaging.message.body.size", len(payload)))
		defer func() { endSpan(span, err) }()
	}
	msg := &nats.Msg{Subject: subject, Data: payload, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	f, err := p.js.PublishMsgAsync(msg)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if _, ack := childSpan(ctx, "jetstream ack", trace.SpanKindInternal); ack.IsRecording() {
		defer func() {
			if err == nil {
				ack.SetAttributes(attribute.Int64("anteroom.stream_sequence", int64(seq)))
			}
			endSpan(ack, err)
		}()
	}
	select {
	case a := <-f.Ok():
		return a.Sequence, nil
	case err := <-f.Err():
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, err)
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
	}
}

// CountGranted returns how many granted order events for event ev are on
// the stream and how many distinct claim ids they carry.
func CountGranted(ctx context.Context, js jetstream.JetStream, ev string) (msgs, distinct int, err error) {
	evs, err := ReadEvents(ctx, js, ev, KindGranted)
	seen := make(map[string]struct{}, len(evs))
	for _, e := range evs {
		seen[e.ClaimID] = struct{}{}
	}
	return len(evs), len(seen), err
}

// ReadEvents returns the order events of event ev of the given kinds
// ("granted", "released", "order_cancelled"; none means all three) on the stream, in stream order,
// duplicates included: every event the stream acknowledged before the
// call. It rides out a leader election (internal/jsretry): a fetch that
// failed resumes after the last event read.
//
// How many there are comes from the stream's leader, not from the read's
// ordered consumer: that consumer (R1) sits on any of the stream's
// servers, and a publish is acknowledged once a majority stored it, so the
// server it sits on may not hold the last ones yet (its count would end
// the read early); its fetches wait for them instead.
func ReadEvents(ctx context.Context, js jetstream.JetStream, ev string, kinds ...Kind) ([]OrderEvent, error) {
	if len(kinds) == 0 {
		kinds = []Kind{KindGranted, KindReleased, KindCancelled}
	}
	counts, err := subjectCounts(ctx, js, ev)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ev, err)
	}
	subjects := make([]string, len(kinds))
	pending := 0
	for i, k := range kinds {
		subjects[i] = Subject(ev, k)
		pending += int(counts[subjects[i]])
	}
	out := make([]OrderEvent, 0, pending)
	if pending == 0 {
		return out, nil
	}
	c, err := jsretry.Value(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
		// A fetch recreates the consumer: a few tries there (nats.go
		// would try forever, ctx unseen), then the loop below retries.
		return js.OrderedConsumer(ctx, StreamName, jetstream.OrderedConsumerConfig{FilterSubjects: subjects, MaxResetAttempts: 2})
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ev, err)
	}
	var retry *jsretry.Retry
	for len(out) < pending {
		// Each fetch (re)creates the ordered consumer after the last
		// event delivered, so a failed one is simply asked again.
		batch, err := c.Fetch(min(pending-len(out), 1000), jetstream.FetchMaxWait(2*time.Second))
		if err == nil {
			n, ferr := fetched(batch, &out, pending)
			if ferr != nil {
				return out, fmt.Errorf("read %s: %w", ev, ferr)
			}
			err = batch.Error()
			if n > 0 && (err == nil || errors.Is(err, nats.ErrTimeout)) {
				retry = nil
				continue
			}
			if err == nil || errors.Is(err, nats.ErrTimeout) {
				err = fmt.Errorf("%d of %d messages before the stream stopped answering: %w", len(out), pending, nats.ErrTimeout)
			}
		}
		if retry == nil {
			retry = jsretry.Start()
		}
		if !retry.Again(ctx, err) {
			return out, fmt.Errorf("read %s: %w", ev, err)
		}
	}
	return out, nil
}

// fetched appends the order events of batch to out, up to limit of them,
// and returns how many messages it held.
func fetched(batch jetstream.MessageBatch, out *[]OrderEvent, limit int) (int, error) {
	n := 0
	for m := range batch.Messages() {
		n++
		if len(*out) >= limit {
			continue // stored after the count: not this read's
		}
		var oe OrderEvent
		if err := json.Unmarshal(m.Data(), &oe); err != nil {
			return n, fmt.Errorf("message %s: %w", m.Headers().Get(jetstream.MsgIDHeader), err)
		}
		if md, err := m.Metadata(); err == nil {
			oe.Seq = md.Sequence.Stream
		}
		*out = append(*out, oe)
	}
	return n, nil
}

// subjectCounts returns how many order events of each subject of event
// ev the stream holds, duplicates included, from the stream leader's
// subject index (one request, no message is read).
func subjectCounts(ctx context.Context, js jetstream.JetStream, ev string) (map[string]uint64, error) {
	info, err := jsretry.Value(ctx, func(ctx context.Context) (*jetstream.StreamInfo, error) {
		st, err := js.Stream(ctx, StreamName)
		if err != nil {
			return nil, err
		}
		return st.Info(ctx, jetstream.WithSubjectFilter(Subject(ev, "*")))
	})
	if err != nil {
		return nil, fmt.Errorf("stream info: %w", err)
	}
	return info.State.Subjects, nil
}
