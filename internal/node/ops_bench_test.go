package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// The sizing figures of bench/RESULTS.md (docs/operate.md, Sizing) come from these
// benchmarks:
//
//	go test -run '^$' -bench BenchmarkOps -benchtime 20000x ./internal/node/
//
// Client and server share the machine's cores, so every figure is a lower
// bound of what a dedicated core does.

// redisCPU returns the CPU seconds (user + system) a redis-server has used.
func opsRedisCPU(b *testing.B, rdb *redis.Client) float64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, l := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// opsNopPublisher acknowledges at once: the claim benchmark measures Redis.
type opsNopPublisher struct{}

func (opsNopPublisher) Publish(context.Context, string, string, []byte) error { return nil }

func (opsNopPublisher) PublishGrant(context.Context, string, string, []byte) error { return nil }

// BenchmarkOpsRedisShard measures what one Redis shard (one redis-server,
// single-threaded) spends per join and per claim: the figures that decide
// how many shards a sale needs. It reports operations per second of Redis
// CPU, i.e. the ceiling of one shard's core.
func BenchmarkOpsRedisShard(b *testing.B) {
	ops := map[string]func(ctx context.Context, rdb *redis.Client, i int64) error{
		"join": func(ctx context.Context, rdb *redis.Client, i int64) error {
			now := time.Now()
			_, err := queue.NewJoiner(rdb).Join(ctx, "size", fmt.Sprint("u", i),
				queue.Times{Opens: now.Add(-time.Hour), WindowEnd: now.Add(-time.Minute), JoinEnd: now.Add(time.Hour)})
			return err
		},
	}
	for _, name := range []string{"join", "claim"} {
		b.Run(name, func(b *testing.B) {
			r := testenv.StartRedis(b)
			rdb := r.Client(b)
			ctx := context.Background()
			op := ops[name]
			if name == "claim" {
				store := claim.NewStore(rdb)
				if err := store.Lay(ctx, claim.Sale{ID: "size", Buckets: 1}, 1_000_000_000); err != nil {
					b.Fatal(err)
				}
				svc := claim.NewService(store, opsNopPublisher{}, claim.WithBatch(32))
				op = func(ctx context.Context, _ *redis.Client, i int64) error {
					_, err := svc.Claim(ctx, claim.Request{Event: "size", User: fmt.Sprint("u", i), IdemKey: "k", Limit: 1, Buckets: 1})
					return err
				}
			}
			var next, failed atomic.Int64
			cpu0 := opsRedisCPU(b, rdb)
			b.SetParallelism(32)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := op(ctx, rdb, next.Add(1)); err != nil {
						failed.Add(1)
					}
				}
			})
			elapsed := time.Since(start)
			b.StopTimer()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d failed", n, b.N)
			}
			cpu := opsRedisCPU(b, rdb) - cpu0
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), name+"s/s")
			b.ReportMetric(float64(b.N)/cpu, name+"s/redis-cpu-s")
		})
	}
}

// BenchmarkOpsStatusHTTP measures GET /events/{id}/status answered by an
// `anteroom serve` process over real HTTP with keep-alive: ticket
// verification, the decision from the node's view, JSON; no Redis. It
// reports the rate reached (the load generator shares the cores) and the
// rate per second of the server process's own CPU, read from /proc.
func BenchmarkOpsStatusHTTP(b *testing.B) {
	r := testenv.StartRedis(b)
	ns := testenv.StartNATS(b)
	bin := buildOpsBinary(b)
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(b))
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "ANTEROOM_ADDR="+addr, "ANTEROOM_REDIS_URL="+r.URL(), "ANTEROOM_NATS_URL="+ns.URL(),
		"ANTEROOM_DATA_DIR="+b.TempDir(), "ANTEROOM_ADMIN_TOKEN=bench-admin-token-0123456789abcdef", "ANTEROOM_DRAIN_DELAY=0s",
		"ANTEROOM_IDENTITY=header", "ANTEROOM_TRUSTED_PROXIES=127.0.0.1") // the bench plays the gateway
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatal("serve not ready")
		}
	}
	sale := openSale(10, 1, time.Minute, 0, 1)
	sale["limits"] = map[string]any{"status": map[string]any{"ticket": map[string]any{"per_second": -1}, "ip": map[string]any{"per_second": -1}}}
	raw, _ := json.Marshal(sale)
	if code, body := opsHTTP(b, http.MethodPut, base+"/admin/events/size", map[string]string{"Authorization": "Bearer bench-admin-token-0123"}, raw); code != http.StatusCreated {
		b.Fatalf("create: %d %v", code, body)
	}
	code, body := opsHTTP(b, http.MethodPost, base+"/events/size/join", map[string]string{"X-User-ID": "u1"}, nil)
	ticket, _ := body["ticket"].(string)
	if code != http.StatusOK || ticket == "" {
		b.Fatalf("join: %d %v", code, body)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var failed atomic.Int64
	cpu0 := processCPU(b, cmd.Process.Pid)
	b.SetParallelism(32)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodGet, base+"/events/size/status", nil)
			req.Header.Set("Authorization", "Bearer "+ticket)
			resp, err := client.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				failed.Add(1)
			}
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d status requests failed", f, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "status/s")
	b.ReportMetric(float64(b.N)/(processCPU(b, cmd.Process.Pid)-cpu0), "status/server-cpu-s")
}

// processCPU returns the CPU seconds (user + system) process pid has used,
// from /proc/pid/stat.
func processCPU(b *testing.B, pid int) float64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	// Fields after the parenthesised command name; utime and stime are
	// the 14th and 15th fields of the line, in clock ticks (100 a second).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}
