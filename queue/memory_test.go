package queue_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

func usedMemory(b *testing.B, rdb *redis.Client) int64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no used_memory in INFO")
	return 0
}

// BenchmarkJoinMemory joins b.N users to one event on a real redis-server
// and reports Redis memory per waiting user. Run it at a million joins:
//
//	go test -run '^$' -bench JoinMemory -benchtime 1000000x ./queue
func BenchmarkJoinMemory(b *testing.B) {
	r := testenv.StartRedis(b)
	rdb := r.Client(b)
	ctx := context.Background()
	j := queue.NewJoiner(rdb)
	now := time.Now()
	times := queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(-time.Second), JoinEnd: now.Add(time.Hour)}
	if _, err := j.Join(ctx, "mem", "warm-up", times); err != nil {
		b.Fatal(err)
	}
	before := usedMemory(b, rdb)
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if _, err := j.Join(ctx, "mem", fmt.Sprintf("user-%09d", i), times); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	after := usedMemory(b, rdb)
	b.ReportMetric(float64(after-before)/float64(b.N), "redis-bytes/user")
}
