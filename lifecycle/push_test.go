package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/pushstub"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/push"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// configFunc is a configs from a function.
type configFunc func(ctx context.Context, id string) (event.Config, error)

func (f configFunc) Get(ctx context.Context, id string) (event.Config, error) { return f(ctx, id) }

// TestPushDelivererRetriesThenOnce: your_turn events on the stream reach
// the subscribed place's browser through the push consumer: a push
// service that answers 503 first is tried again, the notice then arrives
// once (the event published twice, as a stalled node may, sends nothing
// more), and events of other types or unsubscribed places send nothing.
func TestPushDelivererRetriesThenOnce(t *testing.T) {
	s := startServers(t)
	_, js := s.connect(t)
	key, err := push.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := push.New(s.rdb, push.Config{PrivateKey: key, Subject: "mailto:ops@shop.example",
		Endpoints: push.Endpoints{Hosts: []string{"127.0.0.1"}, AllowHTTP: true}, Targets: loopback(t)})
	if err != nil {
		t.Fatal(err)
	}
	stub, err := pushstub.Start(svc.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stub.Close)
	stub.FailFirst(1, http.StatusServiceUnavailable)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sub, _ := json.Marshal(stub.Subscription())
	if err := svc.Save(ctx, "drop", 1, 9, sub, time.Now().Add(time.Hour), time.Now()); err != nil {
		t.Fatal(err)
	}
	var failures atomic.Int64
	cfgs := configFunc(func(_ context.Context, id string) (event.Config, error) {
		return event.Config{ID: id, AdmissionTTLSeconds: 120}, nil
	})
	d := NewPushDeliverer(js, cfgs, svc, DeliverConfig{Backoff: func(int) time.Duration { return 20 * time.Millisecond },
		OnError: func(error) { failures.Add(1) }})
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	publish := func(id, typ string, data map[string]any) {
		body, _ := json.Marshal(Event{ID: id, Type: typ, Event: "drop", Data: data})
		msg := &nats.Msg{Subject: Subject("drop", typ), Data: body, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, id+"-"+time.Now().String()) // a copy past the duplicate window
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	publish("drop.sold_out.1", SoldOut, map[string]any{})
	publish("drop.your_turn.8", YourTurn, map[string]any{"position": 8, "seq": 9, "shard": 0}) // another shard's seq 9
	publish("drop.your_turn.3", YourTurn, map[string]any{"position": 3, "seq": 9, "shard": 1})
	publish("drop.your_turn.3", YourTurn, map[string]any{"position": 3, "seq": 9, "shard": 1})
	testenv.Eventually(t, "the notice after a 503", 20*time.Second, func() error {
		if n, _ := s.rdb.Exists(ctx, "ar:{drop}:push:1.9").Result(); n != 0 {
			return fmt.Errorf("the subscription is still kept; the stub received %d requests", len(stub.Messages()))
		}
		return nil
	})
	// Both copies handled: the consumer has nothing pending.
	testenv.Eventually(t, "every event acknowledged", 20*time.Second, func() error {
		c, err := js.Consumer(ctx, StreamName, PushConsumerName)
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("%d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	msgs := stub.Messages()
	if len(msgs) != 2 {
		t.Fatalf("stub received %d requests, want 2 (a 503, then the notice)", len(msgs))
	}
	for _, m := range msgs {
		var got push.Message
		if m.Err != nil || m.Decode(&got) != nil || got.Type != "your_turn" || got.Event != "drop" || m.TTL != "120" {
			t.Errorf("request %+v (%+v), want the drop's your_turn notice with TTL 120", m, got)
		}
	}
	if failures.Load() == 0 {
		t.Error("the 503 was not reported")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
