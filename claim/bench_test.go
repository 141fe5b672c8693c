package claim

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

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
