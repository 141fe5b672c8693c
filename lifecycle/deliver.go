package lifecycle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/jsretry"
	"github.com/anteroom/anteroom/internal/netguard"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// ConsumerName is the durable consumer every node's Deliverer shares.
const ConsumerName = "anteroom-webhooks"

// configs is what a Deliverer needs from the event store.
type configs interface {
	Get(ctx context.Context, id string) (event.Config, error)
}

// DeliverConfig tunes a Deliverer.
type DeliverConfig struct {
	// AllowHTTP delivers to http URLs too; otherwise only https.
	//
	// Default: false
	AllowHTTP bool
	// Targets says which addresses a webhook may connect to
	// (ANTEROOM_ALLOW_PRIVATE_TARGETS).
	//
	// Default: public addresses only
	Targets netguard.Policy
	// Workers is how many deliveries run at once on this node.
	//
	// Default: 8
	Workers int
	// Timeout bounds one HTTP attempt.
	//
	// Default: 10s
	Timeout time.Duration
	// MaxAttempts is how many times an event is tried before it is given
	// up (and reported to OnError).
	//
	// Default: 12
	MaxAttempts int
	// Backoff returns the wait before attempt n+1 after attempt n failed.
	//
	// Default: 1s doubling per attempt, at most 10 minutes
	Backoff func(n int) time.Duration
	// OnError receives failed attempts.
	OnError func(error)
	// Now is the clock webhook signatures are stamped with.
	//
	// Default: time.Now
	Now func() time.Time
}

// Deliverer POSTs lifecycle events to the sale's webhooks from the shared
// durable consumer. Redeliveries skip webhooks already answered 2xx (a
// marker in Redis kept 7 days). Safe for concurrent use.
type Deliverer struct {
	js      jetstream.JetStream
	rdb     redis.UniversalClient
	configs configs
	cfg     DeliverConfig
	client  *http.Client
	now     func() time.Time
}

// NewDeliverer returns a Deliverer; Run starts it.
func NewDeliverer(js jetstream.JetStream, rdb redis.UniversalClient, c configs, cfg DeliverConfig) *Deliverer {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 12
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Backoff == nil {
		cfg.Backoff = func(n int) time.Duration { return min(time.Second<<min(n-1, 20), 10*time.Minute) }
	}
	// Never follows a redirect: the URL staff set is the only target.
	client := cfg.Targets.Client(cfg.Timeout)
	return &Deliverer{js: js, rdb: rdb, configs: c, cfg: cfg, client: client, now: cfg.Now}
}

// Run consumes until ctx is done.
func (d *Deliverer) Run(ctx context.Context) error {
	return consume(ctx, d.js, "webhook", jetstream.ConsumerConfig{
		Durable: ConsumerName, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: d.cfg.Timeout*time.Duration(event.MaxWebhooks) + 10*time.Second, MaxDeliver: d.cfg.MaxAttempts,
		MaxAckPending: 1000,
	}, d.cfg.Workers, d.handle)
}

// deliveries is how many times m has been delivered, this time included
// (1 when its metadata cannot be read).
func deliveries(m jetstream.Msg) int {
	if md, err := m.Metadata(); err == nil {
		return int(md.NumDelivered)
	}
	return 1
}

// consume runs handle on each message of the durable consumer cc of the
// lifecycle stream, up to workers at once, until ctx is done; then it
// waits for the handles in flight. what names the consumer in errors.
func consume(ctx context.Context, js jetstream.JetStream, what string, cc jetstream.ConsumerConfig, workers int, handle func(context.Context, jetstream.Msg)) error {
	c, err := jsretry.Value(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
		return js.CreateOrUpdateConsumer(ctx, StreamName, cc)
	})
	if err != nil {
		return fmt.Errorf("%s consumer: %w", what, err)
	}
	it, err := c.Messages(jetstream.PullMaxMessages(workers))
	if err != nil {
		return fmt.Errorf("%s consumer: %w", what, err)
	}
	go func() { <-ctx.Done(); it.Stop() }()
	sem := make(chan struct{}, workers)
	for {
		m, err := it.Next()
		if err != nil {
			for range workers { // wait for the handles in flight
				sem <- struct{}{}
			}
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			handle(ctx, m)
		}()
	}
}

// handle delivers one message to every webhook that wants it, then acks,
// or naks with the backoff delay when any webhook failed.
func (d *Deliverer) handle(ctx context.Context, m jetstream.Msg) {
	var e Event
	if err := json.Unmarshal(m.Data(), &e); err != nil || e.ID == "" || !event.ValidID(e.Event) {
		d.report(fmt.Errorf("webhook: undecodable lifecycle event dropped"))
		_ = m.Term()
		return
	}
	cfg, err := d.configs.Get(ctx, e.Event)
	if errors.Is(err, event.ErrNotFound) {
		_ = m.Ack()
		return
	}
	attempt := deliveries(m)
	failed := err != nil
	for i := range cfg.Webhooks {
		w := &cfg.Webhooks[i]
		if !w.Wants(e.Type) {
			continue
		}
		if err := d.deliver(ctx, w, e, m.Data()); err != nil {
			failed = true
			d.report(fmt.Errorf("webhook %s attempt %d of %s: %w", e.ID, attempt, redactURL(w.URL), err))
		}
	}
	if !failed {
		_ = m.Ack()
		return
	}
	if attempt >= d.cfg.MaxAttempts {
		d.report(fmt.Errorf("webhook %s: given up after %d attempts", e.ID, attempt))
	}
	_ = m.NakWithDelay(d.cfg.Backoff(attempt))
}

// deliver POSTs body to w once, unless an earlier attempt succeeded.
func (d *Deliverer) deliver(ctx context.Context, w *event.Webhook, e Event, body []byte) error {
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "https" && !(u.Scheme == "http" && d.cfg.AllowHTTP)) {
		return errors.New("url refused: https only unless ANTEROOM_WEBHOOK_ALLOW_HTTP")
	}
	sum := sha256.Sum256([]byte(w.URL))
	done := "ar:{" + e.Event + "}:wh:" + hex.EncodeToString(sum[:8]) + ":" + e.ID
	if n, err := d.rdb.Exists(ctx, done).Result(); err == nil && n == 1 {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "anteroom-webhooks/1")
	req.Header.Set(SignatureHeader, Sign(w.Secret, d.now(), body))
	req.Header.Set(EventIDHeader, e.ID)
	req.Header.Set(EventTypeHeader, e.Type)
	resp, err := d.client.Do(req)
	if err != nil {
		return errors.New("request failed: " + netguard.Class(err)) // the class only: the text may hold the URL
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("answered %d", resp.StatusCode)
	}
	return d.rdb.Set(ctx, done, 1, 7*24*time.Hour).Err()
}

func (d *Deliverer) report(err error) {
	if d.cfg.OnError != nil {
		d.cfg.OnError(err)
	}
}

// redactURL names a webhook by scheme and host only (paths may hold
// tokens).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable url)"
	}
	return u.Scheme + "://" + u.Host
}
