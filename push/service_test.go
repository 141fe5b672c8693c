package push_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/netguard"
	"github.com/anteroom/anteroom/internal/pushstub"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/push"
	"github.com/redis/go-redis/v9"
)

// newService returns a Service on a real redis-server, with a fresh VAPID
// key, allowed to send to the stub's host over http, and the stub.
func newService(t *testing.T) (*push.Service, *pushstub.Stub, *redis.Client) {
	t.Helper()
	rdb := testenv.StartRedis(t).Client(t)
	key, err := push.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := push.New(rdb, push.Config{PrivateKey: key, Subject: "mailto:ops@shop.example",
		Endpoints: push.Endpoints{Hosts: []string{"127.0.0.1"}, AllowHTTP: true}, Targets: loopback(t)})
	if err != nil {
		t.Fatal(err)
	}
	stub, err := pushstub.Start(svc.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stub.Close)
	return svc, stub, rdb
}

// loopback is the push client's policy in tests, whose stub listens on
// loopback: allowed by name, as an operator would.
func loopback(t *testing.T) netguard.Policy {
	t.Helper()
	p, err := netguard.Allow(netguard.Loopback)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func subJSON(t *testing.T, sub map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(sub)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNotifyDeliversEncryptedSignedMessage: a saved subscription gets one
// notice, VAPID-signed by the node's key (aud = the endpoint's origin),
// encrypted for the browser (RFC 8291) and decrypted by the stub, naming
// the event and saying it is the person's turn; the subscription is then
// forgotten, so a retried event sends nothing more.
func TestNotifyDeliversEncryptedSignedMessage(t *testing.T) {
	svc, stub, _ := newService(t)
	ctx := context.Background()
	now := time.Now()
	sub := stub.Subscription()
	sub["title"], sub["body"], sub["expirationTime"] = "✓ Your turn", "Claim before 12:05", nil // as toJSON() has it
	if err := svc.Save(ctx, "drop", -1, 7, subJSON(t, sub), now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	if on, err := svc.Subscribed(ctx, "drop"); err != nil || !on {
		t.Fatalf("Subscribed = %v, %v; want true", on, err)
	}
	if err := svc.Notify(ctx, "drop", -1, 8, time.Minute); err != nil || len(stub.Messages()) != 0 {
		t.Fatalf("another place's notice: %v, %d messages; want none sent", err, len(stub.Messages()))
	}
	if err := svc.Notify(ctx, "drop", -1, 7, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	msgs := stub.Messages()
	if len(msgs) != 1 || msgs[0].Err != nil {
		t.Fatalf("stub received %+v, want one valid message", msgs)
	}
	var got push.Message
	if err := msgs[0].Decode(&got); err != nil {
		t.Fatalf("payload %q: %v", msgs[0].Plaintext, err)
	}
	want := push.Message{Type: "your_turn", Event: "drop", URL: "/e/drop", Title: "✓ Your turn", Body: "Claim before 12:05"}
	if got != want {
		t.Errorf("payload %+v, want %+v", got, want)
	}
	if msgs[0].Subject != "mailto:ops@shop.example" || msgs[0].TTL != "300" || msgs[0].Urgency != "high" {
		t.Errorf("sub %q TTL %q urgency %q, want mailto:ops@shop.example, 300 and high", msgs[0].Subject, msgs[0].TTL, msgs[0].Urgency)
	}
	if err := svc.Notify(ctx, "drop", -1, 7, time.Minute); err != nil || len(stub.Messages()) != 1 {
		t.Errorf("a retry after a success: %v, %d messages; want nothing more sent", err, len(stub.Messages()))
	}
}

// TestNotifyPlacesOfShards: the places of a sharded sale are (shard, seq):
// the same seq on another shard is someone else.
func TestNotifyPlacesOfShards(t *testing.T) {
	svc, stub, _ := newService(t)
	ctx := context.Background()
	now := time.Now()
	if err := svc.Save(ctx, "spread", 2, 5, subJSON(t, stub.Subscription()), now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	for _, shard := range []int{-1, 0, 3} {
		if err := svc.Notify(ctx, "spread", shard, 5, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(stub.Messages()); n != 0 {
		t.Fatalf("%d messages for other places, want 0", n)
	}
	if err := svc.Notify(ctx, "spread", 2, 5, time.Minute); err != nil || len(stub.Messages()) != 1 {
		t.Fatalf("shard 2 seq 5: %v, %d messages, want 1", err, len(stub.Messages()))
	}
}

// TestNotifyServiceAnswers: a push service's 5xx is retried (the
// subscription is kept); 410 Gone forgets it without an error.
func TestNotifyServiceAnswers(t *testing.T) {
	svc, stub, rdb := newService(t)
	ctx := context.Background()
	now := time.Now()
	if err := svc.Save(ctx, "ev", -1, 1, subJSON(t, stub.Subscription()), now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	stub.AnswerWith(http.StatusServiceUnavailable)
	if err := svc.Notify(ctx, "ev", -1, 1, time.Minute); err == nil {
		t.Fatal("a 503 from the push service: got no error, want a retryable one")
	}
	if n, _ := rdb.Exists(ctx, "ar:{ev}:push:1").Result(); n != 1 {
		t.Fatal("the subscription was forgotten after a 503")
	}
	stub.AnswerWith(http.StatusGone)
	if err := svc.Notify(ctx, "ev", -1, 1, time.Minute); err != nil {
		t.Fatalf("410: %v, want nil", err)
	}
	if n, _ := rdb.Exists(ctx, "ar:{ev}:push:1").Result(); n != 0 {
		t.Error("a gone subscription is still kept")
	}
}

// TestSaveRefusesBadSubscriptions: each bad subscription is refused with
// ErrInvalid or ErrTooLarge and nothing is saved.
func TestSaveRefusesBadSubscriptions(t *testing.T) {
	svc, stub, rdb := newService(t)
	strict, err := push.New(rdb, push.Config{PrivateKey: mustKey(t), Subject: "https://shop.example/contact"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	good := stub.Subscription()
	keys := good["keys"].(map[string]string)
	with := func(f func(m map[string]any)) []byte {
		m := map[string]any{"endpoint": good["endpoint"], "keys": map[string]string{"p256dh": keys["p256dh"], "auth": keys["auth"]}}
		f(m)
		return subJSON(t, m)
	}
	setKey := func(k, v string) func(m map[string]any) {
		return func(m map[string]any) { m["keys"].(map[string]string)[k] = v }
	}
	offCurve := make([]byte, 65)
	offCurve[0], offCurve[64] = 4, 1
	u, _ := url.Parse(stub.Endpoint())
	cases := []struct {
		name string
		svc  *push.Service
		body []byte
		want error
	}{
		{"oversized", svc, with(func(m map[string]any) {
			m["endpoint"] = stub.Endpoint() + "?" + strings.Repeat("x", push.MaxSubscription)
		}), push.ErrTooLarge},
		{"not JSON", svc, []byte("endpoint=x"), push.ErrInvalid},
		{"unknown field", svc, with(func(m map[string]any) { m["expirationTime"] = 1; m["extra"] = "x" }), push.ErrInvalid},
		{"http without the unsafe setting", strict, with(func(map[string]any) {}), push.ErrInvalid},
		{"host not a push service", svc, with(func(m map[string]any) { m["endpoint"] = "http://localhost:" + u.Port() + "/push/sub-1" }), push.ErrInvalid},
		{"credentials in the endpoint", svc, with(func(m map[string]any) { m["endpoint"] = "http://a:b@127.0.0.1:" + u.Port() + "/x" }), push.ErrInvalid},
		{"relative endpoint", svc, with(func(m map[string]any) { m["endpoint"] = "/push" }), push.ErrInvalid},
		{"short p256dh", svc, with(setKey("p256dh", keys["p256dh"][:40])), push.ErrInvalid},
		{"p256dh off the curve", svc, with(setKey("p256dh", base64.RawURLEncoding.EncodeToString(offCurve))), push.ErrInvalid},
		{"auth of 15 bytes", svc, with(setKey("auth", base64.RawURLEncoding.EncodeToString(make([]byte, 15)))), push.ErrInvalid},
		{"auth not base64url", svc, with(setKey("auth", "!!!!!!!!!!!!!!!!!!!!!!")), push.ErrInvalid},
		{"title too long", svc, with(func(m map[string]any) { m["title"] = strings.Repeat("é", push.MaxText+1) }), push.ErrInvalid},
	}
	for _, c := range cases {
		err := c.svc.Save(ctx, "ev", -1, 1, c.body, now.Add(time.Hour), now)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if n, _ := rdb.DBSize(ctx).Result(); n != 0 {
		keys, _ := rdb.Keys(ctx, "*").Result()
		t.Errorf("refused subscriptions left %d keys: %v", n, keys)
	}
}

func mustKey(t *testing.T) string {
	t.Helper()
	k, err := push.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestNewRefusesBadSettings: no key, a key of the wrong length, a
// subject that is neither mailto: nor https:.
func TestNewRefusesBadSettings(t *testing.T) {
	for name, cfg := range map[string]push.Config{
		"no key":        {Subject: "mailto:a@b"},
		"short key":     {PrivateKey: base64.RawURLEncoding.EncodeToString(make([]byte, 31)), Subject: "mailto:a@b"},
		"zero key":      {PrivateKey: base64.RawURLEncoding.EncodeToString(make([]byte, 32)), Subject: "mailto:a@b"},
		"http subject":  {PrivateKey: mustKey(t), Subject: "http://shop.example"},
		"empty subject": {PrivateKey: mustKey(t)},
	} {
		if _, err := push.New(nil, cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestNotifyConcurrentCopiesSendOnce: copies of one your_turn event handled
// at once (the push deliverer's workers, a redelivery) send one notice;
// the others are told to retry and then find nothing to send. Before the
// fix each copy read the subscription and sent (lifecycle's
// TestPushDelivererRetriesThenOnce saw three requests in a CI run).
func TestNotifyConcurrentCopiesSendOnce(t *testing.T) {
	svc, stub, _ := newService(t)
	ctx := context.Background()
	now := time.Now()
	if err := svc.Save(ctx, "drop", -1, 7, subJSON(t, stub.Subscription()), now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	const copies = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_ = svc.Notify(ctx, "drop", -1, 7, time.Minute) // an error: retried later
		}()
	}
	close(start)
	wg.Wait()
	if n := len(stub.Messages()); n != 1 {
		t.Fatalf("%d copies at once sent %d notices, want 1", copies, n)
	}
	if err := svc.Notify(ctx, "drop", -1, 7, time.Minute); err != nil || len(stub.Messages()) != 1 {
		t.Errorf("a retry after the copies: %v, %d notices; want nothing more sent", err, len(stub.Messages()))
	}
}

// TestNotifyLockReleasesOnlyItsOwn: a copy whose send outlived its lock
// (the lock expired; another copy took it) must not delete the other
// copy's lock when it finishes: a third copy would then send beside the
// second, and the browser would get two notices. Before the fix the lock
// was released with an unconditional DEL.
func TestNotifyLockReleasesOnlyItsOwn(t *testing.T) {
	svc, stub, rdb := newService(t)
	ctx := context.Background()
	now := time.Now()
	if err := svc.Save(ctx, "drop", -1, 7, subJSON(t, stub.Subscription()), now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	const lock = "ar:{drop}:push:7:sending"
	stub.Hold()
	held := func(n int) {
		t.Helper()
		if err := wait.Until(10*time.Second, 5*time.Millisecond, func() error {
			if got := stub.Held(); got != n {
				return fmt.Errorf("%d requests at the push service, want %d", got, n)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	notify := func() chan error {
		done := make(chan error, 1)
		go func() { done <- svc.Notify(ctx, "drop", -1, 7, time.Minute) }()
		return done
	}
	t.Cleanup(func() {
		for stub.Release(http.StatusServiceUnavailable) {
		}
	})

	a := notify() // copy A takes the lock and sends, slowly
	held(1)
	// A's lock expires while A still sends (what its TTL does to a send
	// slower than the timeout + 5 s, forced here).
	if err := rdb.PExpire(ctx, lock, time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	if err := wait.Until(10*time.Second, 5*time.Millisecond, func() error {
		if n, _ := rdb.Exists(ctx, lock).Result(); n != 0 {
			return errors.New("A's lock has not expired")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b := notify() // copy B takes the free lock and sends too
	held(2)
	stub.Release(http.StatusServiceUnavailable) // A's send fails: the subscription is kept
	if err := <-a; err == nil {
		t.Fatal("A: a 503 returned no error")
	}
	if n, err := rdb.Exists(ctx, lock).Result(); err != nil || n != 1 {
		t.Errorf("after A finished, B's lock exists = %d (%v), want 1: A freed B's lock", n, err)
	}
	// Copy C, while B still sends, must be told to retry, not send.
	c := notify()
	if err := wait.Until(2*time.Second, 5*time.Millisecond, func() error {
		select {
		case err := <-c:
			if err == nil {
				return wait.Stop(errors.New("C returned without an error"))
			}
			return nil
		default:
		}
		if stub.Held() > 1 {
			return wait.Stop(errors.New("C sent a notice while B was sending"))
		}
		return errors.New("C has not returned")
	}); err != nil {
		t.Error(err)
	}
	for stub.Release(http.StatusCreated) {
	}
	if err := <-b; err != nil {
		t.Errorf("B: %v", err)
	}
	delivered := 0
	for _, m := range stub.Messages() {
		if m.Err == nil && m.Status/100 == 2 {
			delivered++
		}
	}
	if delivered != 1 {
		t.Errorf("%d notices delivered, want 1", delivered)
	}
}

// TestNotifyRefusesPrivateTargets: by default the push client connects to
// public addresses only: an endpoint on a listed host that resolves to
// loopback is refused when dialled (the stub sees nothing), the error
// names the class, and the subscription is kept for a retry.
func TestNotifyRefusesPrivateTargets(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	svc, err := push.New(rdb, push.Config{PrivateKey: mustKey(t), Subject: "mailto:ops@shop.example",
		Endpoints: push.Endpoints{Hosts: []string{"127.0.0.1"}, AllowHTTP: true}})
	if err != nil {
		t.Fatal(err)
	}
	stub, err := pushstub.Start(svc.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stub.Close)
	ctx := context.Background()
	now := time.Now()
	if err := svc.Save(ctx, "drop", -1, 7, subJSON(t, stub.Subscription()), now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	err = svc.Notify(ctx, "drop", -1, 7, time.Minute)
	if err == nil || !strings.HasSuffix(err.Error(), "push request failed: refused_target") {
		t.Errorf("Notify to a loopback endpoint: %v, want push request failed: refused_target", err)
	}
	if n := len(stub.Messages()); n != 0 {
		t.Errorf("the loopback stub got %d requests, want 0", n)
	}
	if n, _ := rdb.Exists(ctx, "ar:{drop}:push:7").Result(); n != 1 {
		t.Error("the subscription was forgotten after a refused dial; want it kept for a retry")
	}
}
