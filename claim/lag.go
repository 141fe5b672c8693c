package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/internal/jsretry"
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
	st, err := stream(ctx, js)
	if err != nil {
		return nil, fmt.Errorf("order lag: %w", err)
	}
	info, err := jsretry.Value(ctx, func(ctx context.Context) (*jetstream.ConsumerInfo, error) {
		cons, err := st.Consumer(ctx, WorkerConsumer)
		if err != nil {
			return nil, err
		}
		return cons.Info(ctx)
	})
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("order lag: %w", err)
	}
	lag := &Lag{Pending: info.NumPending, AckPending: info.NumAckPending}
	if lag.Pending > 0 || lag.AckPending > 0 {
		// The first unacknowledged event follows the acknowledgement floor.
		m, err := jsretry.Value(ctx, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
			return st.GetMsg(ctx, info.AckFloor.Stream+1)
		})
		if err == nil {
			lag.OldestSeconds = max(time.Since(m.Time).Seconds(), 0)
		}
	}
	return lag, nil
}

// OrderStatuses returns the status (confirmed or released) of every order
// of event ev the worker recorded, by claim id; empty when no worker has
// ever run.
func OrderStatuses(ctx context.Context, js jetstream.JetStream, ev string) (map[string]Status, error) {
	kv, err := jsretry.Value(ctx, func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, OrdersBucket) })
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return map[string]Status{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("orders: %w", err)
	}
	// A watch whose consumer was lost in a leader election delivers
	// nothing, ever: one that goes quiet for a try's bound is started
	// again.
	r := jsretry.Start()
	for {
		out, err := watchOrders(ctx, kv, ev)
		if err == nil || !r.Again(ctx, err) {
			return out, err
		}
	}
}

// watchOrders reads the orders of event ev from a watch of the bucket,
// and fails with nats.ErrTimeout when the watch delivers nothing for
// jsretry.Try.
func watchOrders(ctx context.Context, kv jetstream.KeyValue, ev string) (map[string]Status, error) {
	out := map[string]Status{}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The watch's consumer is created under wctx, which it then lives
	// by: a creation that takes longer than a try is cut short here.
	slow := time.AfterFunc(jsretry.Try, cancel)
	w, err := kv.Watch(wctx, ev+".*", jetstream.IgnoreDeletes())
	if !slow.Stop() && ctx.Err() == nil {
		if err == nil {
			w.Stop()
		}
		return nil, fmt.Errorf("orders of %s: the watch took over %v to start: %w", ev, jsretry.Try, nats.ErrTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("orders of %s: %w", ev, err)
	}
	defer w.Stop()
	quiet := time.NewTimer(jsretry.Try)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("orders of %s: %w", ev, ctx.Err())
		case <-quiet.C:
			return nil, fmt.Errorf("orders of %s: %d read, then nothing for %v: %w", ev, len(out), jsretry.Try, nats.ErrTimeout)
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
			quiet.Reset(jsretry.Try)
		}
	}
}
