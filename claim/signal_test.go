package claim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// TestSignalLimitOneGrant: 20 concurrent claims by 10 users (two each)
// sharing one payment fingerprint, one claim allowed per payment, stock
// and per-user limit to spare: exactly one is granted and the other 19
// are refused naming the payment signal; on redis-server and on a Redis
// Cluster, one claim per script call and micro-batched. The signal's set
// expires at SignalsUntil. A release gives the count back (another user
// then claims with it), and a replay of the granted request stays a
// replay, not a refusal.
func TestSignalLimitOneGrant(t *testing.T) {
	servers := map[string]func(t *testing.T) redis.UniversalClient{
		"redis-server":  func(t *testing.T) redis.UniversalClient { return testenv.StartRedis(t).Client(t) },
		"redis-cluster": func(t *testing.T) redis.UniversalClient { return testenv.StartRedisCluster(t, 3).Client(t) },
	}
	for name, client := range servers {
		for _, batch := range []int{0, 16} {
			t.Run(fmt.Sprintf("%s/batch-%d", name, batch), func(t *testing.T) {
				e := newEnv(t, client(t), testenv.StartNATS(t).URL(), 1, WithBatch(batch))
				signalLimitOneGrant(t, e)
			})
		}
	}
}

func signalLimitOneGrant(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sale := Sale{ID: "ring", Buckets: 1}
	if err := e.store.Lay(ctx, sale, 100); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(2 * time.Hour).Truncate(time.Millisecond)
	card := []Signal{{Dim: SignalPayment, Hash: "00112233445566778899aabbccddeeff", Max: 1}}
	req := func(user, key string) Request {
		return Request{Event: sale.ID, User: user, IdemKey: key, Limit: 2, Buckets: 1, Pos: 1, Signals: card, SignalsUntil: until}
	}
	var mu sync.Mutex
	var granted []Result
	var grantedReq []Request
	refused := map[string]int{}
	var wg sync.WaitGroup
	for u := range 10 {
		for k := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := req(fmt.Sprintf("u%d", u), fmt.Sprintf("k%d", k))
				res, err := e.svc.Claim(ctx, r)
				mu.Lock()
				defer mu.Unlock()
				var se *SignalLimitError
				switch {
				case err == nil:
					granted, grantedReq = append(granted, res), append(grantedReq, r)
				case errors.As(err, &se) && errors.Is(err, ErrSignalLimit):
					refused[se.Dim]++
				default:
					t.Errorf("claim %s/%s: %v", r.User, r.IdemKey, err)
				}
			}()
		}
	}
	wg.Wait()
	if len(granted) != 1 || refused[SignalPayment] != 19 {
		t.Fatalf("20 claims sharing one payment: %d granted, refused %v; want 1 granted and 19 refused naming payment", len(granted), refused)
	}
	k := bucketOf(sale.ID, 0).signal(SignalPayment, card[0].Hash)
	if exp, err := e.rdb.PExpireTime(ctx, k).Result(); err != nil || exp.Milliseconds() != until.UnixMilli() {
		t.Fatalf("the signal set expires at %v (%v), want %v", exp, err, until.UnixMilli())
	}
	again, err := e.svc.Claim(ctx, grantedReq[0])
	if err != nil || !again.Replay || again.ClaimID != granted[0].ClaimID {
		t.Fatalf("the granted request again: %+v %v, want a replay of %s", again, err, granted[0].ClaimID)
	}
	if _, err := e.svc.Claim(ctx, req("late", "k")); !errors.Is(err, ErrSignalLimit) {
		t.Fatalf("another user with the card before the release: %v, want ErrSignalLimit", err)
	}
	if _, err := e.svc.Release(ctx, sale.ID, granted[0].ClaimID, grantedReq[0].User); err != nil {
		t.Fatal(err)
	}
	if n, err := e.rdb.SCard(ctx, k).Result(); err != nil || n != 0 {
		t.Fatalf("the signal holds %d claims after the release (%v), want 0", n, err)
	}
	if res, err := e.svc.Claim(ctx, req("late", "k2")); err != nil || res.Replay {
		t.Fatalf("another user with the card after the release: %+v %v, want a grant", res, err)
	}
}

// TestSignalLimitsEachDimension: a claim carries several signals; the
// first one at its limit refuses it (named), nothing is counted for the
// refused claim, and Max N lets N claims share a value.
func TestSignalLimitsEachDimension(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	sale := Sale{ID: "dims", Buckets: 1}
	if err := e.store.Lay(ctx, sale, 100); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour)
	h := func(c byte) string { return fmt.Sprintf("%032x", c) }
	claimWith := func(user string, sigs ...Signal) error {
		_, err := e.svc.Claim(ctx, Request{Event: sale.ID, User: user, IdemKey: "k", Limit: 5, Buckets: 1, Pos: 1, Signals: sigs, SignalsUntil: until})
		return err
	}
	phone := Signal{Dim: SignalPhone, Hash: h(1), Max: 2}
	addr := Signal{Dim: SignalAddress, Hash: h(2), Max: 1}
	steps := []struct {
		user string
		sigs []Signal
		dim  string
	}{
		{"a", []Signal{phone, addr}, ""},
		{"b", []Signal{phone, {Dim: SignalAddress, Hash: h(3), Max: 1}}, ""},
		{"c", []Signal{{Dim: SignalAddress, Hash: h(4), Max: 1}, phone}, SignalPhone}, // the phone's two are taken
		{"d", []Signal{{Dim: SignalPhone, Hash: h(5), Max: 2}, addr}, SignalAddress},
		{"e", []Signal{{Dim: SignalAddress, Hash: h(4), Max: 1}}, ""}, // c's refused claim counted nothing
	}
	for i, s := range steps {
		err := claimWith(s.user, s.sigs...)
		var se *SignalLimitError
		got := ""
		if errors.As(err, &se) {
			got = se.Dim
		} else if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got != s.dim {
			t.Fatalf("step %d: %s refused by %q, want %q", i, s.user, got, s.dim)
		}
	}
	for _, bad := range [][]Signal{
		{{Dim: "shoe", Hash: h(1), Max: 1}},
		{{Dim: SignalPhone, Hash: "not-hex-not-hex-not-hex", Max: 1}},
		{{Dim: SignalPhone, Hash: h(1), Max: 0}},
		{phone, phone},
	} {
		if err := claimWith("z", bad...); err == nil || errors.Is(err, ErrSignalLimit) {
			t.Fatalf("signals %+v: %v, want refused before the script", bad, err)
		}
	}
}
