package lifecycle

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
)

// receiver is a loopback webhook endpoint that verifies signatures and
// answers 500 to the first failFirst attempts of each event id.
type receiver struct {
	t         *testing.T
	secret    string
	failFirst int

	mu       sync.Mutex
	attempts map[string]int // event id -> attempts seen
	bodies   map[string]string
	bad      int
}

func newReceiver(t *testing.T, secret string, failFirst int) (*receiver, *httptest.Server) {
	rc := &receiver{t: t, secret: secret, failFirst: failFirst, attempts: map[string]int{}, bodies: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	return rc, srv
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := Verify(rc.secret, r.Header.Get(SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
		rc.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	id := r.Header.Get(EventIDHeader)
	rc.attempts[id]++
	if prev, ok := rc.bodies[id]; ok && prev != string(body) {
		rc.t.Errorf("event %s: body changed between attempts", id)
	}
	rc.bodies[id] = string(body)
	if rc.attempts[id] <= rc.failFirst {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) count(id string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.attempts[id]
}

// configStore is a fixed configuration for the deliverer.
type configStore map[string]event.Config

func (c configStore) Get(_ context.Context, id string) (event.Config, error) {
	if cfg, ok := c[id]; ok {
		return cfg, nil
	}
	return event.Config{}, event.ErrNotFound
}

// A webhook that fails is retried with the same event id and a valid
// signature until it answers 2xx; a second webhook of the same sale that
// answered at once is not called again by the retries.
func TestWebhookRetriedSignedDeduped(t *testing.T) {
	s := startServers(t)
	_, js := s.connect(t)
	flaky, flakySrv := newReceiver(t, "flaky-secret-0123", 2)
	steady, steadySrv := newReceiver(t, "steady-secret-0123", 0)
	cfg := sale("hooks", 1, time.Time{}).Config
	cfg.Webhooks = []event.Webhook{
		{URL: flakySrv.URL + "/hook?token=x", Secret: "flaky-secret-0123"},
		{URL: steadySrv.URL, Secret: "steady-secret-0123", Events: []string{"sale_opened"}},
	}
	var errs []error
	var mu sync.Mutex
	d := NewDeliverer(js, s.rdb, configStore{"hooks": cfg}, DeliverConfig{
		AllowHTTP: true, Targets: loopback(t), Backoff: func(int) time.Duration { return 20 * time.Millisecond },
		OnError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
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
	sl := sale("hooks", 1, time.Date(2026, 1, 1, 12, 0, 1, 0, time.UTC))
	if err := NewRecorder(s.rdb, js).Observe(context.Background(), sl); err != nil {
		t.Fatal(err)
	}
	const id = "hooks.sale_opened.1"
	deadline := time.Now().Add(20 * time.Second)
	for flaky.count(id) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("flaky webhook saw %d attempts of %s, want 3", flaky.count(id), id)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Acknowledged: the consumer has nothing pending for it any more.
	for {
		c, err := js.Consumer(context.Background(), StreamName, ConsumerName)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending == 0 && info.NumPending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("event still pending: %+v", info)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := steady.count(id); got != 1 {
		t.Errorf("steady webhook called %d times, want 1 (retries skip a delivered webhook)", got)
	}
	if flaky.bad+steady.bad != 0 {
		t.Errorf("%d requests with a bad signature", flaky.bad+steady.bad)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, err := range errs {
		if msg := err.Error(); contains(msg, "token=x") {
			t.Errorf("an error names the webhook's query: %s", msg)
		}
	}
	if len(errs) != 2 {
		t.Errorf("got %d delivery errors, want 2: %v", len(errs), errs)
	}
}

// http URLs are refused unless allowed by name.
func TestWebhookHTTPRefusedByDefault(t *testing.T) {
	d := NewDeliverer(nil, nil, nil, DeliverConfig{})
	w := &event.Webhook{URL: "http://127.0.0.1:1/hook", Secret: "0123456789abcdef"}
	err := d.deliver(context.Background(), w, Event{ID: "x.sale_opened.1", Event: "x"}, nil)
	if err == nil {
		t.Fatal("http webhook delivered without ANTEROOM_WEBHOOK_ALLOW_HTTP")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
