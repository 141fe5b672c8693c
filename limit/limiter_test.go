package limit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/limit"
)

var ctx = context.Background()

// TestEveryDimension spends each dimension's bucket on a real redis-server:
// the burst passes, the next request is refused with that dimension named
// and a retry-after, and neighbouring buckets (another value, another
// event, the other budget) are untouched.
func TestEveryDimension(t *testing.T) {
	r := testenv.StartRedis(t)
	l := limit.New(client(t, r.Client(t)), limit.Config{Timeout: 5 * time.Second, SlowAfter: time.Minute})
	lim := limit.Limit{Rate: 1, Burst: 3}
	cases := []struct {
		rule      limit.Rule
		neighbour limit.Rule
	}{
		{limit.Rule{Budget: "join", Dim: limit.Global}, limit.Rule{Budget: "claim", Dim: limit.Global}},
		{limit.Rule{Budget: "join", Dim: limit.Event, Event: "e1"}, limit.Rule{Budget: "join", Dim: limit.Event, Event: "e2"}},
		{limit.Rule{Budget: "join", Dim: limit.IP, Event: "e1", Value: "192.0.2.1"}, limit.Rule{Budget: "join", Dim: limit.IP, Event: "e1", Value: "192.0.2.2"}},
		{limit.Rule{Budget: "join", Dim: limit.Device, Event: "e1", Value: "dev-a"}, limit.Rule{Budget: "join", Dim: limit.Device, Event: "e1", Value: "dev-b"}},
		{limit.Rule{Budget: "join", Dim: limit.User, Event: "e1", Value: "alice"}, limit.Rule{Budget: "claim", Dim: limit.User, Event: "e1", Value: "alice"}},
		{limit.Rule{Budget: "claim", Dim: limit.User, Event: "e3", Value: "bob"}, limit.Rule{Budget: "claim", Dim: limit.User, Event: "e4", Value: "bob"}},
	}
	for _, tc := range cases {
		t.Run(string(tc.rule.Budget)+"/"+string(tc.rule.Dim), func(t *testing.T) {
			tc.rule.Limit, tc.neighbour.Limit = lim, lim
			for i := range 3 {
				d := l.Allow(ctx, tc.rule)
				if !d.Allowed || d.Local || d.Remaining != int64(2-i) {
					t.Fatalf("request %d: got %+v, want allowed by Redis with %d left", i+1, d, 2-i)
				}
			}
			d := l.Allow(ctx, tc.rule)
			if d.Allowed || d.Dim != tc.rule.Dim || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
				t.Fatalf("request 4: got %+v, want refused by %s with a retry-after of at most 1s", d, tc.rule.Dim)
			}
			if d := l.Allow(ctx, tc.neighbour); !d.Allowed || d.Remaining != 2 {
				t.Fatalf("neighbour %s: got %+v, want a full bucket of its own", tc.neighbour.Key(), d)
			}
		})
	}
	// Cold keys expire: the TTL is the time to refill plus a second.
	ttl := r.Client(t).PTTL(ctx, limit.Rule{Budget: "join", Dim: limit.Global}.Key()).Val()
	if ttl <= 0 || ttl > 4*time.Second {
		t.Errorf("bucket TTL %v, want (0, 4s]", ttl)
	}
	if s := l.Stats(); s.RedisDecisions == 0 || s.LocalDecisions != 0 || s.Degraded {
		t.Errorf("stats %+v: want Redis decisions only", s)
	}
}

// TestRefill waits (by polling) for a spent bucket to refill.
func TestRefill(t *testing.T) {
	r := testenv.StartRedis(t)
	l := limit.New(client(t, r.Client(t)), limit.Config{Timeout: 5 * time.Second, SlowAfter: time.Minute})
	rule := limit.Rule{Budget: "join", Dim: limit.User, Event: "e", Value: "u", Limit: limit.Limit{Rate: 20, Burst: 1}}
	if d := l.Allow(ctx, rule); !d.Allowed {
		t.Fatalf("first: %+v", d)
	}
	d := l.Allow(ctx, rule)
	if d.Allowed {
		t.Fatalf("second at once: %+v, want refused", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !l.Allow(ctx, rule).Allowed {
		if time.Now().After(deadline) {
			t.Fatal("the bucket never refilled")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCallerRulesFirst: a request refused by its own bucket spends nothing
// of the shared ones; an allowed request spends every bucket.
func TestCallerRulesFirst(t *testing.T) {
	r := testenv.StartRedis(t)
	l := limit.New(client(t, r.Client(t)), limit.Config{Timeout: 5 * time.Second, SlowAfter: time.Minute})
	user := limit.Rule{Budget: "join", Dim: limit.User, Event: "e", Value: "greedy", Limit: limit.Limit{Rate: 0.001, Burst: 1}}
	ip := limit.Rule{Budget: "join", Dim: limit.IP, Event: "e", Value: "198.51.100.7", Limit: limit.Limit{Rate: 0.001, Burst: 100}}
	event := limit.Rule{Budget: "join", Dim: limit.Event, Event: "e", Limit: limit.Limit{Rate: 0.001, Burst: 5}}
	global := limit.Rule{Budget: "join", Dim: limit.Global, Limit: limit.Limit{Rate: 0.001, Burst: 5}}
	if d := l.Allow(ctx, global, event, ip, user); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("first: %+v, want allowed with 0 left (the user's bucket)", d)
	}
	for range 10 {
		if d := l.Allow(ctx, global, event, ip, user); d.Allowed || d.Dim != limit.User {
			t.Fatalf("repeat: %+v, want refused by the user bucket", d)
		}
	}
	other := user
	other.Value = "patient"
	d := l.Allow(ctx, global, event, other)
	if !d.Allowed || d.Remaining != 0 {
		t.Fatalf("another user: %+v, want allowed", d)
	}
	// The shared buckets were spent once per allowed request only.
	for _, k := range []string{event.Key(), global.Key()} {
		if got, _ := r.Client(t).HGet(ctx, k, "t").Float64(); int(got) != 3 {
			t.Errorf("%s holds %v tokens, want 3 (and a sliver refilled)", k, got)
		}
	}
	if d := l.Allow(ctx); !d.Allowed || d.Remaining != -1 {
		t.Errorf("no rules: %+v, want allowed", d)
	}
	if d := l.Allow(ctx, limit.Rule{Budget: "join", Dim: limit.IP, Value: "x"}); !d.Allowed {
		t.Errorf("unlimited rule: %+v, want allowed", d)
	}
}

// TestOnRedisCluster runs a pipelined multi-rule decision on a Redis
// Cluster: each bucket is its own hash tag, so nothing is CROSSSLOT, and
// buckets spread over the masters.
func TestOnRedisCluster(t *testing.T) {
	c := testenv.StartRedisCluster(t, 3)
	l := limit.New(client(t, c.Client(t)), limit.Config{Timeout: 5 * time.Second, SlowAfter: time.Minute})
	lim := limit.Limit{Rate: 1, Burst: 2}
	slots := map[int64]bool{}
	rdb := c.Client(t)
	for i := range 50 {
		rules := []limit.Rule{
			{Budget: "join", Dim: limit.User, Event: "e", Value: fmt.Sprint("u", i), Limit: lim},
			{Budget: "join", Dim: limit.IP, Event: "e", Value: fmt.Sprint("10.0.0.", i), Limit: lim},
			{Budget: "join", Dim: limit.Device, Event: "e", Value: fmt.Sprint("d", i), Limit: lim},
			{Budget: "join", Dim: limit.Event, Event: "e", Limit: limit.Limit{Rate: 1, Burst: 1000}},
		}
		if d := l.Allow(ctx, rules...); !d.Allowed || d.Local {
			t.Fatalf("request %d: %+v, want allowed by Redis", i, d)
		}
		slots[rdb.ClusterKeySlot(ctx, rules[0].Key()).Val()] = true
	}
	if len(slots) < 25 {
		t.Errorf("50 user buckets fell in %d slots, want them spread", len(slots))
	}
	if s := l.Stats(); s.RedisErrors != 0 {
		t.Errorf("stats %+v: want no Redis errors", s)
	}
}

func TestReservations(t *testing.T) {
	r := testenv.StartRedis(t)
	res := limit.NewReservations(r.Client(t))
	const ttl = time.Hour
	steps := []struct {
		kind, ev, value, user string
		want                  error
	}{
		{"device", "e", "dev-1", "alice", nil},
		{"device", "e", "dev-1", "alice", nil},              // the holder again
		{"device", "e", "dev-1", "bob", limit.ErrTaken},     // another user
		{"device", "other", "dev-1", "bob", nil},            // another event
		{"payment", "e", "dev-1", "bob", nil},               // another kind
		{"payment", "e", "card-9", "carol", nil},            //
		{"payment", "e", "card-9", "alice", limit.ErrTaken}, //
		{"device", "e", "dev-2", "bob", nil},                //
		{"device", "e", "dev-1", "alice", nil},              // still the holder
	}
	for i, s := range steps {
		if err := res.Reserve(ctx, s.kind, s.ev, s.value, s.user, ttl); !errors.Is(err, s.want) {
			t.Fatalf("step %d %+v: got %v, want %v", i, s, err, s.want)
		}
	}
	keys := r.Client(t).Keys(ctx, "ar:{rsv:*").Val()
	if len(keys) != 5 {
		t.Fatalf("keys %v, want 5 reservations", keys)
	}
	for _, k := range keys {
		if ttl := r.Client(t).PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("%s expires in %v, want (0, 1h]", k, ttl)
		}
	}
	r.Stop(t)
	if err := res.Reserve(ctx, "device", "e", "dev-3", "dave", ttl); err == nil || errors.Is(err, limit.ErrTaken) {
		t.Errorf("with Redis down: got %v, want a Redis error", err)
	}
}

// TestRefusedCount: a decision says how many buckets refused, so a
// caller can tell a refusal by the per-IP bucket alone (a busy network)
// from one where the caller's own buckets refused too.
func TestRefusedCount(t *testing.T) {
	r := testenv.StartRedis(t)
	l := limit.New(client(t, r.Client(t)), limit.Config{Timeout: 5 * time.Second, SlowAfter: time.Minute})
	one := limit.Limit{Rate: 0.001, Burst: 1}
	ip := limit.Rule{Budget: "join", Dim: limit.IP, Event: "e", Value: "100.64.0.1", Limit: one}
	user := func(u string) limit.Rule {
		return limit.Rule{Budget: "join", Dim: limit.User, Event: "e", Value: u, Limit: one}
	}
	if d := l.Allow(ctx, user("a"), ip); !d.Allowed || d.Refused != 0 {
		t.Fatalf("first: %+v, want allowed, none refused", d)
	}
	if d := l.Allow(ctx, user("b"), ip); d.Allowed || d.Dim != limit.IP || d.Refused != 1 {
		t.Fatalf("another user, same address: %+v, want refused by the ip bucket alone", d)
	}
	if d := l.Allow(ctx, user("a"), ip); d.Allowed || d.Refused != 2 {
		t.Fatalf("the first user again: %+v, want refused by two buckets", d)
	}
}
