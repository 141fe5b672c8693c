package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/nats-io/nats.go/jetstream"
)

// PushConsumerName is the durable consumer every node's PushDeliverer
// shares; it reads your_turn events only.
const PushConsumerName = "anteroom-push"

// notifier sends a place's "your turn" notice (*push.Service): shard is
// -1 in a sale of one join shard; ttl is how long the notice is worth
// delivering. A nil error means sent, or nothing to send.
type notifier interface {
	Notify(ctx context.Context, ev string, shard int, seq int64, ttl time.Duration) error
}

// PushDeliverer sends Web Push notices for your_turn events, beside the
// webhooks' Deliverer: its own durable consumer on the lifecycle stream
// (so a push service's trouble never holds a webhook back, nor the other
// way round), each event at least once, retried with the Deliverer's
// backoff until it succeeds or MaxAttempts. The notifier forgets a
// subscription once its notice is sent, so a redelivery sends nothing
// twice. Safe for concurrent use.
type PushDeliverer struct {
	js      jetstream.JetStream
	configs configs
	push    notifier
	cfg     DeliverConfig
}

// NewPushDeliverer returns a PushDeliverer (cfg as for NewDeliverer;
// AllowHTTP and Now unused: the notifier owns its endpoints); Run starts
// it.
func NewPushDeliverer(js jetstream.JetStream, c configs, n notifier, cfg DeliverConfig) *PushDeliverer {
	d := NewDeliverer(js, nil, c, cfg) // the defaults
	return &PushDeliverer{js: js, configs: c, push: n, cfg: d.cfg}
}

// Run consumes until ctx is done.
func (d *PushDeliverer) Run(ctx context.Context) error {
	return consume(ctx, d.js, "push", jetstream.ConsumerConfig{
		Durable: PushConsumerName, AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: Subject("*", YourTurn),
		AckWait: d.cfg.Timeout + 10*time.Second, MaxDeliver: d.cfg.MaxAttempts, MaxAckPending: 1000,
	}, d.cfg.Workers, d.handle)
}

// turnPlace is what a your_turn event says of the place admitted.
type turnPlace struct {
	Seq   int64 `json:"seq"`
	Shard *int  `json:"shard"`
}

// handle sends one event's notice, then acks, or naks with the backoff.
func (d *PushDeliverer) handle(ctx context.Context, m jetstream.Msg) {
	var e struct {
		ID    string    `json:"id"`
		Type  string    `json:"type"`
		Event string    `json:"event"`
		Data  turnPlace `json:"data"`
	}
	if err := json.Unmarshal(m.Data(), &e); err != nil || e.Type != YourTurn || !event.ValidID(e.Event) || e.Data.Seq < 1 {
		d.report(errors.New("push: undecodable your_turn event dropped"))
		_ = m.Term()
		return
	}
	cfg, err := d.configs.Get(ctx, e.Event)
	if errors.Is(err, event.ErrNotFound) {
		_ = m.Ack()
		return
	}
	attempt := deliveries(m)
	if err == nil {
		shard := -1
		if e.Data.Shard != nil {
			shard = *e.Data.Shard
		}
		ttl := time.Duration(cfg.AdmissionTTLSeconds) * time.Second
		if err = d.push.Notify(ctx, e.Event, shard, e.Data.Seq, max(ttl, time.Minute)); err == nil {
			_ = m.Ack()
			return
		}
	}
	d.report(fmt.Errorf("push %s attempt %d: %w", e.ID, attempt, err))
	if attempt >= d.cfg.MaxAttempts {
		d.report(fmt.Errorf("push %s: given up after %d attempts", e.ID, attempt))
	}
	_ = m.NakWithDelay(d.cfg.Backoff(attempt))
}

func (d *PushDeliverer) report(err error) {
	if d.cfg.OnError != nil {
		d.cfg.OnError(err)
	}
}
