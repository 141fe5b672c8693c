package claim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamName is the JetStream stream that holds every order event.
const StreamName = "ANTEROOM_ORDERS"

// Subject returns the subject of an order event of kind ("granted" or
// "released") for event ev.
func Subject(ev, kind string) string { return "anteroom.orders." + ev + "." + kind }

// StreamConfig describes the order stream: limits retention, kept for 90
// days (well past any sale, so stock can be rebuilt from it), duplicates
// rejected within DuplicateWindow by Nats-Msg-Id.
func StreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:       StreamName,
		Subjects:   []string{"anteroom.orders.>"},
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		MaxAge:     90 * 24 * time.Hour,
		Duplicates: DuplicateWindow,
		Replicas:   max(replicas, 1),
	}
}

// DuplicateWindow is how long JetStream remembers a Nats-Msg-Id.
const DuplicateWindow = 2 * time.Minute

// EnsureStream creates or updates the order stream.
func EnsureStream(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if _, err := js.CreateOrUpdateStream(ctx, StreamConfig(replicas)); err != nil {
		return fmt.Errorf("order stream: %w", err)
	}
	return nil
}

// Publisher publishes order events and waits for JetStream's
// acknowledgement. Publishes from concurrent callers share the connection
// and are acknowledged asynchronously, so they batch on the wire. It is safe
// for concurrent use.
type Publisher struct {
	js jetstream.JetStream
}

// NewPublisher returns a Publisher on js.
func NewPublisher(js jetstream.JetStream) *Publisher { return &Publisher{js: js} }

// Publish sends payload with Nats-Msg-Id = id to subject and returns once
// JetStream has stored it (or recognised it as a duplicate). Errors wrap
// ErrUnavailable.
func (p *Publisher) Publish(ctx context.Context, subject, id string, payload []byte) error {
	msg := &nats.Msg{Subject: subject, Data: payload, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, id)
	f, err := p.js.PublishMsgAsync(msg)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	select {
	case <-f.Ok():
		return nil
	case err := <-f.Err():
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
	}
}

// CountGranted returns how many granted order events for event ev are on
// the stream and how many distinct claim ids they carry.
func CountGranted(ctx context.Context, js jetstream.JetStream, ev string) (msgs, distinct int, err error) {
	c, err := js.OrderedConsumer(ctx, StreamName, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{Subject(ev, "granted")},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("count %s: %w", ev, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("count %s: %w", ev, err)
	}
	pending := int(info.NumPending)
	seen := make(map[string]struct{}, pending)
	for msgs < pending {
		batch, err := c.Fetch(min(pending-msgs, 1000), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return msgs, len(seen), fmt.Errorf("count %s: %w", ev, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			seen[m.Headers().Get(jetstream.MsgIDHeader)] = struct{}{}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return msgs, len(seen), fmt.Errorf("count %s: %w", ev, err)
		}
		if n == 0 {
			break
		}
		msgs += n
	}
	return msgs, len(seen), nil
}
