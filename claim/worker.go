package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/jsretry"
)

// OrdersBucket is the JetStream key-value bucket in which the order worker
// records one Order per claim, keyed "<event>.<claim id>".
const OrdersBucket = "anteroom-orders"

// WorkerConsumer names the order worker's durable consumer.
const WorkerConsumer = "anteroom-order-worker"

// Order is the order worker's record of one claim. Status is confirmed,
// released, cancelled (by staff, final), or void: a grant the fence superseded (decided on stock a
// rebuild replaced, stored after the rebuild's epoch marker), never
// acknowledged to its client and never counted.
type Order struct {
	Event      string    `json:"event"`
	ClaimID    string    `json:"claim_id"`
	User       string    `json:"user"`
	Pos        int64     `json:"pos"`
	Status     Status    `json:"status"`
	GrantedAt  time.Time `json:"granted_at,omitzero"`
	ReleasedAt time.Time `json:"released_at,omitzero"`
	// CancelledAt, Reason and Restock are a cancelled order's: when
	// staff cancelled it, why, and whether its unit went back to stock.
	CancelledAt time.Time `json:"cancelled_at,omitzero"`
	Reason      string    `json:"reason,omitempty"`
	Restock     bool      `json:"restock,omitempty"`
}

func orderKey(ev, id string) string { return ev + "." + id }

// WorkerConfig tunes a Worker.
type WorkerConfig struct {
	// Replicas of the orders key-value bucket; match the stream's.
	//
	// Default: 1
	Replicas int
	// Concurrency bounds the messages handled at once.
	//
	// Default: 32
	Concurrency int
	// AckWait is how long JetStream waits for an acknowledgement before it
	// redelivers.
	//
	// Default: 30s
	AckWait time.Duration
	// OnError receives errors of single messages (they are redelivered).
	OnError func(error)
}

// Worker is the order worker: a durable JetStream consumer with explicit
// acknowledgements on the order stream. For each granted event it marks
// the claim confirmed in Redis (only if it is still pending), then records
// the order with the status Redis answered in the OrdersBucket,
// deduplicated by claim id (Create fails when the key exists); for each
// released event it marks the order released unless Redis holds the claim
// confirmed. A message is acknowledged only after both, so a crash
// redelivers it, and every step is idempotent. Redelivery and republishing
// after JetStream's duplicate window therefore never record an order
// twice, and an order is recorded confirmed only once Redis confirmed it.
type Worker struct {
	store  *Store
	kv     jetstream.KeyValue
	cons   jetstream.Consumer
	stream *streamHandle
	cfg    WorkerConfig
}

// NewWorker creates (or binds to) the orders bucket and the durable
// consumer.
func NewWorker(ctx context.Context, store *Store, js jetstream.JetStream, cfg WorkerConfig) (*Worker, error) {
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 32
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 30 * time.Second
	}
	if cfg.OnError == nil {
		cfg.OnError = func(error) {}
	}
	kv, err := jsretry.Value(ctx, func(ctx context.Context) (jetstream.KeyValue, error) {
		return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: OrdersBucket, Description: "anteroom orders, one per claim", History: 1,
			Storage: jetstream.FileStorage, Replicas: cfg.Replicas,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("orders bucket: %w", err)
	}
	cons, err := jsretry.Value(ctx, func(ctx context.Context) (jetstream.Consumer, error) {
		return js.CreateOrUpdateConsumer(ctx, StreamName, jetstream.ConsumerConfig{
			Durable: WorkerConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: cfg.AckWait,
			DeliverPolicy: jetstream.DeliverAllPolicy, MaxAckPending: 4 * cfg.Concurrency,
			FilterSubject: "anteroom.orders.>", Replicas: cfg.Replicas,
		})
	})
	if err != nil {
		return nil, fmt.Errorf("order consumer: %w", err)
	}
	return &Worker{store: store, kv: kv, cons: cons, stream: &streamHandle{js: js}, cfg: cfg}, nil
}

// Run handles order events until ctx is done, then lets the messages in
// hand finish and returns.
func (w *Worker) Run(ctx context.Context) error {
	hctx := context.WithoutCancel(ctx)
	sem := make(chan struct{}, w.cfg.Concurrency)
	var wg sync.WaitGroup
	cc, err := w.cons.Consume(func(m jetstream.Msg) {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			mctx, cancel := context.WithTimeout(hctx, 10*time.Second)
			defer cancel()
			w.handle(mctx, m)
		}()
	}, jetstream.PullMaxMessages(2*w.cfg.Concurrency))
	if err != nil {
		return fmt.Errorf("order worker: %w", err)
	}
	<-ctx.Done()
	cc.Stop()
	<-cc.Closed()
	wg.Wait()
	return nil
}

func (w *Worker) handle(ctx context.Context, m jetstream.Msg) {
	var oe OrderEvent
	if err := json.Unmarshal(m.Data(), &oe); err != nil || oe.ClaimID == "" {
		w.cfg.OnError(fmt.Errorf("order worker: undecodable message on %s: dropped", m.Subject()))
		_ = m.Term()
		return
	}
	var err error
	switch oe.Type {
	case KindGranted:
		var md *jetstream.MsgMetadata
		if md, err = m.Metadata(); err == nil {
			err = w.granted(ctx, oe, md.Sequence.Stream)
		}
	case KindReleased:
		err = w.released(ctx, oe)
	case KindCancelled:
		err = w.cancelled(ctx, oe)
	default:
		w.cfg.OnError(fmt.Errorf("order worker: unknown event type %q: dropped", oe.Type))
		_ = m.Term()
		return
	}
	if err != nil {
		w.cfg.OnError(fmt.Errorf("order worker: %s %s: %w", oe.Type, oe.ClaimID, err))
		_ = m.NakWithDelay(time.Second)
		return
	}
	if err := m.Ack(); err != nil {
		w.cfg.OnError(fmt.Errorf("order worker: ack %s: %w", oe.ClaimID, err))
	}
}

// granted confirms the claim in Redis, then records the order once per
// claim id with the status Redis answered. Redis decides between a
// confirmation and a release (confirm.lua and release.lua each act only on
// a pending claim), so an order is recorded confirmed only once Redis has
// confirmed the claim, and released when the release came first.
func (w *Worker) granted(ctx context.Context, oe OrderEvent, seq uint64) error {
	key := orderKey(oe.Event, oe.ClaimID)
	o := Order{Event: oe.Event, ClaimID: oe.ClaimID, User: oe.User, Pos: oe.Pos, Status: StatusConfirmed, GrantedAt: oe.At}
	st, err := w.stream.get(ctx)
	if err != nil {
		return err
	}
	first, err := firstMarkerAfter(ctx, st, oe.Event, oe.Epoch)
	if err != nil {
		return err
	}
	if ended(first, seq) {
		// Superseded (see PublishGrant): recorded void, unless an earlier
		// copy of the grant, stored in its epoch, recorded the order.
		o.Status = StatusVoid
		raw, _ := json.Marshal(o)
		if _, err := w.kv.Create(ctx, key, raw); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return err
		}
		return nil
	}
	known := true
	status, err := w.store.Confirm(ctx, oe.Event, oe.ClaimID)
	switch {
	case errors.Is(err, ErrNotFound):
		// Redis lost the claim's record: recorded confirmed (a rebuild
		// restores it so from the stream), unless a release was recorded.
		known = false
	case err != nil:
		return err
	default:
		o.Status = status
	}
	raw, _ := json.Marshal(o)
	_, err = w.kv.Create(ctx, key, raw)
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	// Recorded before: a redelivery, a republish after the duplicate
	// window, the released event first, or a void copy handled first.
	prev, rev, err := w.order(ctx, key)
	if err != nil {
		return err
	}
	if prev.Status == o.Status || (!known && prev.Status != StatusVoid) {
		return nil
	}
	if o.Status == StatusReleased && prev.Status == StatusReleased {
		return nil
	}
	// Redis's answer decides (void: this copy is in its epoch).
	prev.Status = o.Status
	raw, _ = json.Marshal(prev)
	_, err = w.kv.Update(ctx, key, raw, rev)
	return err
}

// released marks the order released, creating it when the released event
// arrives before the granted one. An order whose claim Redis confirmed
// stays confirmed: the release was decided on a copy that had lost the
// confirmation (a failover), and the rebuild trusts the confirmed order.
// A void order stays void.
func (w *Worker) released(ctx context.Context, oe OrderEvent) error {
	return w.rewrite(ctx, oe, func(o *Order) (bool, error) {
		switch o.Status {
		case StatusVoid, StatusCancelled:
			return false, nil
		case StatusReleased:
			if !o.ReleasedAt.IsZero() {
				return false, nil
			}
		case StatusConfirmed:
			// Recorded confirmed because Redis confirmed the claim —
			// or could not find it, when there is no confirmation to
			// keep. Redis decides.
			status, err := w.store.Confirm(ctx, oe.Event, oe.ClaimID)
			if err == nil && status == StatusConfirmed {
				w.cfg.OnError(fmt.Errorf("order worker: released event for confirmed order %s: kept confirmed", orderKey(oe.Event, oe.ClaimID)))
				return false, nil
			}
			if err != nil && !errors.Is(err, ErrNotFound) {
				return false, err
			}
		}
		o.Status, o.ReleasedAt = StatusReleased, oe.At
		return true, nil
	})
}

// rewrite reads the order of oe's claim (a new one from oe when there is
// none) and lets change decide: false leaves it as it is; true writes the
// order change made, on the condition that no other write came between,
// and reads again when one did (five tries in all).
func (w *Worker) rewrite(ctx context.Context, oe OrderEvent, change func(o *Order) (bool, error)) error {
	key := orderKey(oe.Event, oe.ClaimID)
	for attempt := 0; attempt < 5; attempt++ {
		o, rev, err := w.order(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			o = Order{Event: oe.Event, ClaimID: oe.ClaimID, User: oe.User, Pos: oe.Pos}
		} else if err != nil {
			return err
		}
		if write, err := change(&o); err != nil || !write {
			return err
		}
		raw, _ := json.Marshal(o)
		if rev == 0 {
			_, err = w.kv.Create(ctx, key, raw)
		} else {
			_, err = w.kv.Update(ctx, key, raw, rev)
		}
		if err == nil {
			return nil
		}
	}
	return fmt.Errorf("order %s changed concurrently", key)
}

// order reads the order at key. (The worker's writes are conditional
// and not retried here: a handle that fails is redelivered.)
func (w *Worker) order(ctx context.Context, key string) (Order, uint64, error) {
	e, err := jsretry.Value(ctx, func(ctx context.Context) (jetstream.KeyValueEntry, error) { return w.kv.Get(ctx, key) })
	if err != nil {
		return Order{}, 0, err
	}
	var o Order
	if err := json.Unmarshal(e.Value(), &o); err != nil {
		return Order{}, 0, fmt.Errorf("order %s: decode: %w", key, err)
	}
	return o, e.Revision(), nil
}

// cancelled marks the order cancelled, creating it when the
// order_cancelled event arrives before the granted one. Staff's
// cancellation is final: cancel.lua acted on a pending or confirmed claim
// in Redis. A void order stays void (its grant was never counted).
func (w *Worker) cancelled(ctx context.Context, oe OrderEvent) error {
	return w.rewrite(ctx, oe, func(o *Order) (bool, error) {
		if o.Status == StatusVoid || (o.Status == StatusCancelled && !o.CancelledAt.IsZero()) {
			return false, nil
		}
		o.Status, o.CancelledAt, o.Reason, o.Restock = StatusCancelled, oe.At, string(oe.Reason), oe.Restock
		return true, nil
	})
}
