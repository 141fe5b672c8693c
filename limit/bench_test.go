package limit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/limit"
)

// BenchmarkAllow measures one limiter decision: on a real redis-server over
// loopback (one round trip for a single rule; two pipelined phases for a
// caller rule and a shared one), on the node-local buckets a degraded
// limiter uses, and a bare Local.Take.
//
//	go test -run '^$' -bench Allow -benchmem ./limit
func BenchmarkAllow(b *testing.B) {
	r := testenv.StartRedis(b)
	big := limit.Limit{Rate: 1e9, Burst: 1e9}
	user := limit.Rule{Budget: "join", Dim: limit.User, Event: "e", Value: "alice", Limit: big}
	event := limit.Rule{Budget: "join", Dim: limit.Event, Event: "e", Limit: big}
	b.Run("redis-1-rule", func(b *testing.B) {
		l := limit.New(client(b, r.Client(b)), limit.Config{SlowAfter: time.Minute})
		b.ReportAllocs()
		for b.Loop() {
			if d := l.Allow(ctx, user); !d.Allowed || d.Local {
				b.Fatalf("%+v", d)
			}
		}
	})
	b.Run("redis-user+event", func(b *testing.B) {
		l := limit.New(client(b, r.Client(b)), limit.Config{SlowAfter: time.Minute})
		b.ReportAllocs()
		for b.Loop() {
			if d := l.Allow(ctx, user, event); !d.Allowed || d.Local {
				b.Fatalf("%+v", d)
			}
		}
	})
	b.Run("local-degraded", func(b *testing.B) {
		l := limit.New(client(b, r.Client(b)), limit.Config{ProbeFraction: 1e-9})
		hb := l.NewHeartbeat("bench", time.Hour)
		r.Stop(b)
		_ = hb.Beat(ctx) // fails: degraded
		if !l.Degraded() {
			b.Fatal("not degraded")
		}
		b.ReportAllocs()
		for b.Loop() {
			if d := l.Allow(ctx, user, event); !d.Allowed || !d.Local {
				b.Fatalf("%+v", d)
			}
		}
		r.Restart(b)
	})
	b.Run("local-take", func(b *testing.B) {
		loc := limit.NewLocal(0)
		keys := make([]string, 1024)
		for i := range keys {
			keys[i] = fmt.Sprint("st:t:e:", i)
		}
		now := time.Now()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			loc.Take(keys[i%len(keys)], big, now)
			i++
		}
	})
}
