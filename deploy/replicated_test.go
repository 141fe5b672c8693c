package deploy_test

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// TestReplicatedRedisConfig starts a real redis-server on
// redis/replicated.conf and checks that it includes redis.conf and that a
// master without an acknowledging replica refuses writes.
func TestReplicatedRedisConfig(t *testing.T) {
	bin := testenv.Binary(t, "redis-server") // fails under CI=true when missing
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "replicated.conf", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "no")
	cmd.Dir = "redis" // include redis.conf is read from here
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rdb := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	defer rdb.Close()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for rdb.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on replicated.conf did not start:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for k, want := range map[string]string{"min-replicas-to-write": "1", "cluster-enabled": "yes", "maxmemory-policy": "noeviction", "replica-serve-stale-data": "no"} {
		if got := rdb.ConfigGet(ctx, k).Val()[k]; got != want {
			t.Errorf("%s %q, want %q", k, got, want)
		}
	}
	// One master serving every slot, with no replica: writes are refused.
	if err := rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", "0", "16383").Err(); err != nil {
		t.Fatal(err)
	}
	for {
		info, _ := rdb.ClusterInfo(ctx).Result()
		if strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster state: %s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOREPLICAS") {
		t.Fatalf("a write on a master without replicas: %v, want NOREPLICAS", err)
	}
}
