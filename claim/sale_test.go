package claim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

// shopper outcomes of one sale, gathered from every client.
type saleResult struct {
	mu       sync.Mutex
	claims   map[string]map[string]bool // user → claim ids answered
	created  map[string]int             // user/key → new grants answered
	mismatch atomic.Int64               // replays naming another claim
	soldOut  atomic.Int64
	limited  atomic.Int64
	retries  atomic.Int64
	errs     atomic.Int64
	firstErr atomic.Value
}

func (r *saleResult) fail(err error) {
	r.errs.Add(1)
	r.firstErr.CompareAndSwap(nil, err.Error())
}

// claimUntilDone claims with one idempotency key, retrying retryable errors
// with the same key as a client would. It returns the claim id, or "" and
// whether the answer was sold out.
func claimUntilDone(ctx context.Context, svc *Service, req Request, res *saleResult) (string, bool) {
	for attempt := 0; attempt < 100; attempt++ {
		got, err := svc.Claim(ctx, req)
		var le *LimitError
		switch {
		case err == nil:
			if !got.Replay {
				res.mu.Lock()
				res.created[req.User+"/"+req.IdemKey]++
				res.mu.Unlock()
			}
			return got.ClaimID, false
		case errors.Is(err, ErrSoldOut):
			res.soldOut.Add(1)
			return "", true
		case errors.As(err, &le):
			res.limited.Add(1)
			return "", false
		case errors.Is(err, ErrUnavailable), errors.Is(err, ErrPaused):
			res.retries.Add(1)
			time.Sleep(time.Duration(5+attempt) * time.Millisecond)
		default:
			res.fail(err)
			return "", false
		}
	}
	res.fail(fmt.Errorf("%s/%s: gave up", req.User, req.IdemKey))
	return "", false
}

// runSale has clients concurrent shoppers claim units of sale for users
// users: every user claims with two keys (every tenth with a third) until
// told sold out, and every fiftieth fires its first request 20 times at
// once.
func runSale(t *testing.T, svc *Service, sale Sale, users, clients int, limit int64) *saleResult {
	t.Helper()
	res := &saleResult{claims: map[string]map[string]bool{}, created: map[string]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	record := func(user, id string) {
		if id == "" {
			return
		}
		res.mu.Lock()
		if res.claims[user] == nil {
			res.claims[user] = map[string]bool{}
		}
		res.claims[user][id] = true
		res.mu.Unlock()
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				user := fmt.Sprintf("u%05d", i)
				keys := []string{"a", "b"}
				if i%10 == 0 {
					keys = append(keys, "c")
				}
				for k, key := range keys {
					req := Request{Event: sale.ID, User: user, Pos: int64(i), IdemKey: key, Limit: limit, Buckets: sale.Buckets}
					copies := 1
					if k == 0 && i%50 == 0 {
						copies = 20
					}
					ids := make([]string, copies)
					var gone bool
					var cwg sync.WaitGroup
					for c := range copies {
						cwg.Add(1)
						go func() {
							defer cwg.Done()
							var so bool
							ids[c], so = claimUntilDone(ctx, svc, req, res)
							if c == 0 {
								gone = so
							}
						}()
					}
					cwg.Wait()
					for _, id := range ids {
						if id != "" && ids[0] != "" && id != ids[0] {
							res.mismatch.Add(1)
						}
						record(user, id)
					}
					if gone {
						break // sold out: a shopper stops here
					}
				}
			}
		}()
	}
	for i := range users {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return res
}

// TestSaleInvariants is the concurrency drill of the claim step: 300
// concurrent clients, 20,000 users, 2,000 units, per-user limit 2, every
// fiftieth user firing the same request 20 times at once — on a single
// redis-server and on a 3-master Redis Cluster, with several buckets so
// that users whose home bucket runs dry take units from others. Exactly
// 2,000 units are granted, nobody holds more than 2, and the stream holds
// exactly one granted event per claim.
func TestSaleInvariants(t *testing.T) {
	const users, units, clients, limit = 20000, 2000, 300, 2
	cases := []struct {
		name    string
		buckets int
		env     func(t *testing.T) *env
	}{
		{"redis-server", 4, func(t *testing.T) *env { return singleRedis(t) }},
		{"redis-cluster", 8, func(t *testing.T) *env {
			c := testenv.StartRedisCluster(t, 3)
			ns := testenv.StartNATS(t)
			return newEnv(t, c.Client(t), ns.URL(), 1, WithBatch(32))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.env(t)
			ev := "sale-" + fmt.Sprint(tc.buckets)
			sale := Sale{ID: ev, Buckets: tc.buckets}
			if err := e.store.Lay(context.Background(), sale, units); err != nil {
				t.Fatal(err)
			}
			e.run(t, sale)
			start := time.Now()
			res := runSale(t, e.svc, sale, users, clients, limit)
			took := time.Since(start)
			if n := res.errs.Load(); n > 0 {
				t.Fatalf("%d unexpected errors, first: %v", n, res.firstErr.Load())
			}
			answered := 0
			for u, ids := range res.claims {
				answered += len(ids)
				if len(ids) > limit {
					t.Errorf("user %s was answered %d claims, limit %d", u, len(ids), limit)
				}
			}
			if answered != units {
				t.Errorf("clients were answered %d distinct claims, want %d", answered, units)
			}
			for k, n := range res.created {
				if n > 1 {
					t.Errorf("%s was answered 201 %d times", k, n)
				}
			}
			if n := res.mismatch.Load(); n > 0 {
				t.Errorf("%d replays named another claim", n)
			}
			e.drained(t, sale)
			got := e.totals(t, sale, units)
			if got.Granted != units || got.Remaining != 0 || got.Parked != 0 {
				t.Errorf("redis totals %+v, want %d granted and nothing left", got, units)
			}
			granted, _ := e.streamCheck(t, ev)
			if len(granted) != units {
				t.Errorf("stream holds %d granted claims, want %d", len(granted), units)
			}
			perUser := map[string]int{}
			for id, oe := range granted {
				perUser[oe.User]++
				if !res.claims[oe.User][id] {
					t.Errorf("claim %s on the stream was never answered to %s", id, oe.User)
				}
			}
			for u, n := range perUser {
				if n > limit {
					t.Errorf("stream grants user %s %d claims, limit %d", u, n, limit)
				}
			}
			t.Logf("%s, %d buckets: %d users, %d granted, %d sold out, %d limited, %d retries in %s",
				tc.name, tc.buckets, users, answered, res.soldOut.Load(), res.limited.Load(), res.retries.Load(), took.Round(time.Millisecond))
		})
	}
}
