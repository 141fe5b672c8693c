package jsretry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{nats.ErrNoResponders, true},
		{fmt.Errorf("read x: %w", nats.ErrNoResponders), true},
		{nats.ErrTimeout, true},
		{jetstream.ErrConsumerLeadershipChanged, true},
		// A publish's no responders, after nats.go's own two tries (a
		// stressed CI run's "rebuild elect: epoch marker of elect: nats:
		// no response from stream" was not retried).
		{fmt.Errorf("epoch marker of elect: %w", jetstream.ErrNoStreamResponse), true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10009, Description: "JetStream cluster can not handle request"}, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10118, Description: "stream is offline"}, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 1, Description: "unavailable"}, true},
		// The key-value watch's consumer is made by the legacy API, whose
		// errors are nats.APIError (a CI run's "orders of elect: nats:
		// JetStream system temporarily unavailable" was not retried).
		{fmt.Errorf("orders of elect: %w", &nats.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}), true},
		{&nats.APIError{Code: 500, ErrorCode: 10009, Description: "JetStream cluster can not handle request"}, true},
		{&nats.APIError{Code: 404, ErrorCode: 10059, Description: "stream not found"}, false},
		{jetstream.ErrStreamNotFound, false},
		{jetstream.ErrMsgNotFound, false},
		{jetstream.ErrConsumerNotFound, false},
		{&jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use"}, false},
		{context.DeadlineExceeded, false}, // the caller's own deadline
		{context.Canceled, false},
		{errors.New("bad"), false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// fast is a policy that fits a unit test.
var fast = policy{budget: 300 * time.Millisecond, try: 50 * time.Millisecond, first: time.Millisecond, most: 5 * time.Millisecond}

func TestValueRetriesTransient(t *testing.T) {
	tries := 0
	v, err := value(context.Background(), fast, func(context.Context) (int, error) {
		if tries++; tries < 3 {
			return 0, nats.ErrNoResponders
		}
		return 7, nil
	})
	if v != 7 || err != nil || tries != 3 {
		t.Fatalf("%d, %v after %d tries; want 7 after 3", v, err, tries)
	}
}

func TestValueStopsOnOtherErrors(t *testing.T) {
	tries := 0
	_, err := value(context.Background(), fast, func(context.Context) (int, error) {
		tries++
		return 0, jetstream.ErrStreamNotFound
	})
	if !errors.Is(err, jetstream.ErrStreamNotFound) || tries != 1 {
		t.Fatalf("%v after %d tries; want stream not found after 1", err, tries)
	}
}

// A try that runs out of its bound (a request to a leader that stepped
// down, never answered) is tried again; the caller's deadline is not.
func TestValueBoundsEachTry(t *testing.T) {
	tries := 0
	v, err := value(context.Background(), fast, func(ctx context.Context) (int, error) {
		if tries++; tries == 1 {
			<-ctx.Done()
			return 0, ctx.Err()
		}
		return 1, nil
	})
	if v != 1 || err != nil || tries != 2 {
		t.Fatalf("%d, %v after %d tries; want 1 after 2", v, err, tries)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tries = 0
	_, err = value(ctx, fast, func(ctx context.Context) (int, error) {
		tries++
		return 0, ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || tries != 1 {
		t.Fatalf("%v after %d tries; want the caller's cancel after 1", err, tries)
	}
}

func TestValueGivesUpAfterBudget(t *testing.T) {
	tries := 0
	_, err := value(context.Background(), fast, func(context.Context) (int, error) {
		tries++
		return 0, nats.ErrNoResponders
	})
	if !errors.Is(err, nats.ErrNoResponders) || tries < 2 {
		t.Fatalf("%v after %d tries; want no responders after several", err, tries)
	}
}
