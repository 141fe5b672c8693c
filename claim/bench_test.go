package claim

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkServiceClaimSignals is BenchmarkServiceClaim's claims on one
// bucket, without and with two signal limits each (a device and a
// payment of the claimer's own): what counting signals in the script
// costs.
//
//	go test -run '^$' -bench BenchmarkServiceClaimSignals -benchtime 20000x ./claim/
func BenchmarkServiceClaimSignals(b *testing.B) {
	for _, sigs := range []int{0, 2} {
		b.Run(fmt.Sprintf("signals=%d", sigs), func(b *testing.B) {
			e := singleRedisB(b, WithBatch(32))
			ctx := context.Background()
			const ev = "bench"
			if err := e.store.Lay(ctx, Sale{ID: ev, Buckets: 1}, 100_000_000); err != nil {
				b.Fatal(err)
			}
			until := time.Now().Add(time.Hour)
			var next, failed atomic.Int64
			b.SetParallelism(64)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := next.Add(1)
					r := Request{Event: ev, User: fmt.Sprint("b", i), IdemKey: "k", Limit: 1, Buckets: 1, SignalsUntil: until}
					if sigs > 0 {
						r.Signals = []Signal{{Dim: SignalDevice, Hash: fmt.Sprintf("%032x", i), Max: 1}, {Dim: SignalPayment, Hash: fmt.Sprintf("%032x", i), Max: 1}}
					}
					if _, err := e.svc.Claim(ctx, r); err != nil {
						failed.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "claims/s")
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d claims failed", n)
			}
		})
	}
}

// BenchmarkServiceClaim measures granted claims per second through
// Service.Claim — the claim script, then the JetStream publish and its
// acknowledgement — on a real redis-server and JetStream, with 128
// concurrent callers, with and without micro-batching.
//
//	go test -run '^$' -bench BenchmarkServiceClaim -benchtime 20000x ./claim/
func BenchmarkServiceClaim(b *testing.B) {
	for _, batch := range []int{0, 32} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			e := singleRedisB(b, WithBatch(batch))
			ctx := context.Background()
			const ev, buckets = "bench", 4
			if err := e.store.Lay(ctx, Sale{ID: ev, Buckets: buckets}, 100_000_000); err != nil {
				b.Fatal(err)
			}
			var next, failed atomic.Int64
			b.SetParallelism(64) // 128 callers on 2 cores
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					u := fmt.Sprint("b", next.Add(1))
					if _, err := e.svc.Claim(ctx, Request{Event: ev, User: u, IdemKey: "k", Limit: 1, Buckets: buckets}); err != nil {
						failed.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "claims/s")
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d claims failed", n)
			}
		})
	}
}
