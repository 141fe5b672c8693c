package lifecycle

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestEventsReachWebhooksOnEveryRedis records a sale's whole life — staff
// pause and resume, a health hold, opening, window closed, sold out, end —
// on redis-server and on the embedded default (miniredis), and delivers it
// to a webhook that wants every type: each event arrives, decodes as an
// Event whose data is an object, and none is dropped as undecodable.
func TestEventsReachWebhooksOnEveryRedis(t *testing.T) {
	testenv.EachRedis(t, func(t *testing.T, rdb *redis.Client) {
		s := servers{rdb: rdb, nats: testenv.StartNATS(t).URL()}
		_, js := s.connect(t)
		const ev, secret = "every", "every-secret-0123"
		rc, srv := newReceiver(t, secret, 0)
		cfg := sale(ev, 1, time.Time{}).Config
		cfg.Webhooks = []event.Webhook{{URL: srv.URL, Secret: secret}}
		var mu sync.Mutex
		var errs []string
		d := NewDeliverer(js, s.rdb, configStore{ev: cfg}, DeliverConfig{
			AllowHTTP: true, Targets: loopback(t), Backoff: func(int) time.Duration { return 20 * time.Millisecond },
			OnError: func(err error) { mu.Lock(); errs = append(errs, err.Error()); mu.Unlock() },
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()

		r := NewRecorder(s.rdb, js)
		start := cfg.StartsAt
		steps := []struct {
			version        int64
			paused, health bool
			at             time.Duration
			frozen, sold   bool
		}{
			{2, true, false, -time.Minute, false, false},  // paused by staff
			{3, false, false, -time.Second, false, false}, // resumed
			{3, false, true, time.Second, true, false},    // opened, window closed, held by health
			{3, false, false, time.Minute, true, true},    // released, sold out
			{3, false, false, 2 * time.Hour, true, true},  // ended
		}
		for i, st := range steps {
			sl := sale(ev, st.version, start.Add(st.at))
			sl.Config.Paused, sl.WindowFrozen, sl.SoldOut, sl.Window = st.paused, st.frozen, st.sold, 7
			sl.HealthHeld, sl.HealthGen = st.health, int64(i)
			if err := r.Observe(context.Background(), sl); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"paused", "resumed", "sale_opened", "window_closed", "sold_out", "sale_ended"}
		deadline := time.Now().Add(30 * time.Second)
		for {
			missing := []string{}
			rc.mu.Lock()
			for _, typ := range want {
				found := false
				for id := range rc.bodies {
					found = found || strings.Contains(id, "."+typ+".")
				}
				if !found {
					missing = append(missing, typ)
				}
			}
			bodies := map[string]string{}
			for id, b := range rc.bodies {
				bodies[id] = b
			}
			rc.mu.Unlock()
			mu.Lock()
			dropped := append([]string(nil), errs...)
			mu.Unlock()
			if len(dropped) > 0 {
				t.Fatalf("deliverer errors: %v", dropped)
			}
			if len(missing) == 0 {
				for id, b := range bodies {
					var e Event
					if err := json.Unmarshal([]byte(b), &e); err != nil || e.ID != id || e.Data == nil || e.AtUnixMs < start.UnixMilli()-3600_000 {
						t.Errorf("event %s: %s decodes to %+v, %v; want an Event with data", id, b, e, err)
					}
					if strings.Contains(id, ".window_closed.") && e.Data["window_size"] != float64(7) {
						t.Errorf("window_closed data %v, want window_size 7", e.Data)
					}
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("webhook never got %v (got %d events)", missing, len(bodies))
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestLateCopyReachesWebhooksOnce publishes a lifecycle event again after
// JetStream's duplicate window, as a node stalled between reading the
// outbox and publishing it would: the stream stores it twice (the docs say
// so), and the webhook that answered the first copy is not called again.
func TestLateCopyReachesWebhooksOnce(t *testing.T) {
	s := startServers(t)
	_, js := s.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	short := st.CachedInfo().Config
	short.Duplicates = 300 * time.Millisecond
	if _, err := js.UpdateStream(ctx, short); err != nil {
		t.Fatal(err)
	}
	const ev, secret, id = "latecopy", "late-secret-01234", "latecopy.sale_opened.1"
	rc, srv := newReceiver(t, secret, 0)
	cfg := sale(ev, 1, time.Time{}).Config
	cfg.Webhooks = []event.Webhook{{URL: srv.URL, Secret: secret}}
	d := NewDeliverer(js, s.rdb, configStore{ev: cfg}, DeliverConfig{AllowHTTP: true, Targets: loopback(t),
		OnError: func(err error) { t.Errorf("deliverer: %v", err) }})
	dctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(dctx) }()
	defer func() { stop(); <-done }()
	if err := NewRecorder(s.rdb, js).Observe(ctx, sale(ev, 1, cfg.StartsAt.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the first delivery", 30*time.Second, func() bool { return rc.count(id) == 1 })
	recent, err := NewRecorder(s.rdb, js).Recent(ctx, ev, 1)
	if err != nil || len(recent) != 1 {
		t.Fatalf("recent: %d %v", len(recent), err)
	}
	again := func() bool {
		m := &nats.Msg{Subject: Subject(ev, "sale_opened"), Data: recent[0], Header: nats.Header{}}
		m.Header.Set(jetstream.MsgIDHeader, id)
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return !ack.Duplicate
	}
	testenv.WaitFor(t, "JetStream to store the late copy", 30*time.Second, again)
	if n := subjectCounts(t, js, ev)["sale_opened"]; n != 2 {
		t.Fatalf("stream holds %d sale_opened messages, want the late copy stored again: 2", n)
	}
	testenv.WaitFor(t, "the late copy to be handled", 30*time.Second, func() bool {
		c, err := js.Consumer(ctx, StreamName, ConsumerName)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Stream >= 2
	})
	if n := rc.count(id); n != 1 {
		t.Errorf("webhook called %d times for %s, want 1", n, id)
	}
}
