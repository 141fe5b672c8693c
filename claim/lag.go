package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Lag is how far the order worker trails the order stream.
type Lag struct {
	// Pending counts events not yet delivered to the worker.
	Pending uint64 `json:"pending"`
	// AckPending counts events delivered and not yet acknowledged.
	AckPending int `json:"ack_pending"`
	// OldestSeconds is the age of the oldest event not acknowledged.
	OldestSeconds float64 `json:"oldest_unacked_seconds"`
}

// OrderLag reads the worker consumer's state. It returns nil without an
// error when no worker has ever run.
func OrderLag(ctx context.Context, js jetstream.JetStream) (*Lag, error) {
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		return nil, fmt.Errorf("order lag: %w", err)
	}
	cons, err := st.Consumer(ctx, WorkerConsumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("order lag: %w", err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("order lag: %w", err)
	}
	lag := &Lag{Pending: info.NumPending, AckPending: info.NumAckPending}
	if lag.Pending > 0 || lag.AckPending > 0 {
		// The first unacknowledged event follows the acknowledgement floor.
		if m, err := st.GetMsg(ctx, info.AckFloor.Stream+1); err == nil {
			lag.OldestSeconds = max(time.Since(m.Time).Seconds(), 0)
		}
	}
	return lag, nil
}

// OrderStatuses returns the status (confirmed or released) of every order
// of event ev the worker recorded, by claim id; empty when no worker has
// ever run.
func OrderStatuses(ctx context.Context, js jetstream.JetStream, ev string) (map[string]Status, error) {
	out := map[string]Status{}
	kv, err := js.KeyValue(ctx, OrdersBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("orders: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := kv.Watch(wctx, ev+".*", jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("orders of %s: %w", ev, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("orders of %s: watcher closed", ev)
			}
			if e == nil { // the initial values are all delivered
				return out, nil
			}
			var o Order
			if err := json.Unmarshal(e.Value(), &o); err == nil {
				out[o.ClaimID] = o.Status
			}
		}
	}
}
