package queue_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// BenchmarkShardedJoins measures the joins/s of one event on a 3-master
// Redis Cluster with S = 1 (every key on one slot) against S = 16 join
// shards, side by side in one run: rounds alternate S = 1 and S = 16, each
// with the same load generator (the same goroutines, connections and
// duration), so both share the machine alike. Every join is a later joiner
// (the window has closed: the costlier path for join shards). Beside
// joins/s it reports each master's Redis CPU time per join, which shows
// where the work lands when the machine's cores, not Redis, are the limit.
//
//	go test -run '^$' -bench ShardedJoins -benchtime 1x ./queue/
//
// ANTEROOM_BENCH_SECONDS sets each round's length (default 5) and
// ANTEROOM_BENCH_WORKERS the goroutines, each with one join in flight
// (default 1024, as a node has in a sale's first minute: concurrent joins
// of one queue share a script call, so with few in flight S = 1's one
// queue batches better than each of S = 16's shards); with
// ANTEROOM_BENCH_WINDOW=1 every join is inside the shuffle window instead. b.N is ignored: a
// round is a fixed time, so it is not a Go benchmark's own figure.
func BenchmarkShardedJoins(b *testing.B) {
	secs := envInt("ANTEROOM_BENCH_SECONDS", 5)
	workers := envInt("ANTEROOM_BENCH_WORKERS", 1024)
	inWindow := os.Getenv("ANTEROOM_BENCH_WINDOW") == "1"
	rc := testenv.StartRedisCluster(b, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs(), PoolSize: workers})
	b.Cleanup(func() { rdb.Close() })
	masters := make([]*redis.Client, 3)
	for i := range masters {
		masters[i] = rc.Node(i).Client(b)
	}
	j := queue.NewJoiner(rdb)
	ctx := context.Background()
	type total struct {
		joins   int64
		secs    float64
		cpu     [3]float64 // per master, summed over rounds
		busiest float64    // the busiest master's CPU, summed over rounds
		client  float64    // this process's CPU (the load generator)
		sys     float64    // the masters' system CPU, summed
	}
	results := map[int]*total{1: {}, 16: {}}
	for round := range 6 {
		shards := []int{1, 16}[round%2]
		now := time.Now()
		times := queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(-time.Second), JoinEnd: now.Add(time.Hour), Shards: shards}
		if inWindow {
			times.WindowEnd = now.Add(time.Hour)
		}
		ev := fmt.Sprintf("bench%d", round)
		before, clientBefore, sysBefore := cpuOf(b, masters, "used_cpu_sys", "used_cpu_user"), selfCPU(), cpuOf(b, masters, "used_cpu_sys")
		var n atomic.Int64
		start := time.Now()
		stop := start.Add(time.Duration(secs) * time.Second)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; time.Now().Before(stop); i++ {
					if _, err := j.Join(ctx, ev, fmt.Sprintf("w%d-%d", w, i), times); err != nil {
						b.Error(err)
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start).Seconds()
		after, sysAfter := cpuOf(b, masters, "used_cpu_sys", "used_cpu_user"), cpuOf(b, masters, "used_cpu_sys")
		for i := range sysAfter {
			results[shards].sys += sysAfter[i] - sysBefore[i]
		}
		t := results[shards]
		t.joins += n.Load()
		t.secs += elapsed
		t.client += selfCPU() - clientBefore
		var busiest float64
		for i := range after {
			t.cpu[i] += after[i] - before[i]
			busiest = max(busiest, after[i]-before[i])
		}
		t.busiest += busiest
	}
	for _, s := range []int{1, 16} {
		t := results[s]
		rate := float64(t.joins) / t.secs
		var cpu float64
		split := make([]string, 3)
		for i, c := range t.cpu {
			cpu += c
			split[i] = fmt.Sprintf("%.1f", 1e6*c/float64(t.joins))
		}
		// With a core per master, the busiest master's CPU per join bounds
		// the rate the cluster could reach.
		ceiling := float64(t.joins) / t.busiest
		b.Logf("S=%-2d %6.0f joins/s | Redis CPU %.1f µs/join (%.1f system), per master %s µs | busiest master %.1f µs/join → ceiling %.0f joins/s | cores busy: Redis %.2f + load generator %.2f",
			s, rate, 1e6*cpu/float64(t.joins), 1e6*t.sys/float64(t.joins), strings.Join(split, " / "), 1e6*t.busiest/float64(t.joins), ceiling, cpu/t.secs, t.client/t.secs)
		b.ReportMetric(rate, fmt.Sprintf("joins/s-S%d", s))
		b.ReportMetric(ceiling, fmt.Sprintf("ceiling-joins/s-S%d", s))
		b.ReportMetric(1e6*cpu/float64(t.joins), fmt.Sprintf("redis-µs/join-S%d", s))
		b.ReportMetric(1e6*t.busiest/float64(t.joins), fmt.Sprintf("busiest-µs/join-S%d", s))
	}
}

// selfCPU returns this process's user + system CPU time in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// cpuOf returns the sum of each master's INFO cpu fields in seconds.
func cpuOf(b *testing.B, masters []*redis.Client, fields ...string) []float64 {
	out := make([]float64, len(masters))
	for i, m := range masters {
		info, err := m.Info(context.Background(), "cpu").Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			k, v, _ := strings.Cut(line, ":")
			if slices.Contains(fields, k) {
				f, _ := strconv.ParseFloat(v, 64)
				out[i] += f
			}
		}
	}
	return out
}
