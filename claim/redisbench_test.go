package claim

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestRedisBenchmarkCall runs the call RedisBenchmark gives, as
// redis-benchmark -r does (each __rand_int__ a random number): every call
// with a new number grants one unit, a repeated number replays that
// user's claim. The harness's EVALSHA baseline broke unnoticed when claim.lua
// gained its signals (two more arguments per request): this test fails on
// such a change.
func TestRedisBenchmarkCall(t *testing.T) {
	r := testenv.StartRedis(t)
	rdb := r.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	command, granted, err := RedisBenchmark(ctx, rdb, 1000)
	if err != nil {
		t.Fatal(err)
	}
	call := func(n int) []any {
		t.Helper()
		args := make([]any, len(command))
		for i, a := range command {
			args[i] = strings.ReplaceAll(a, "__rand_int__", strconv.Itoa(n))
		}
		res, err := rdb.Do(ctx, args...).Slice()
		if err != nil {
			t.Fatalf("call %d: %v", n, err)
		}
		return res
	}
	for n := range 3 {
		if res := call(n); len(res) != 5 || res[0] != int64(0) {
			t.Fatalf("call for user %d: %v, want a grant (code 0)", n, res)
		}
	}
	if res := call(1); res[0] != int64(1) {
		t.Fatalf("a second call for user 1: %v, want code 1 (a replay of its key)", res)
	}
	if g, err := granted(ctx); err != nil || g != 3 {
		t.Fatalf("granted %d (%v), want 3", g, err)
	}

	// redis-benchmark itself, as the harness and BenchmarkClaimHTTP run it.
	bin := testenv.Binary(t, "redis-benchmark")
	host, port, _ := net.SplitHostPort(r.Addr())
	args := append([]string{"-h", host, "-p", port, "-n", "200", "-c", "4", "-r", "100000000", "-q"}, command...)
	if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	if g, err := granted(ctx); err != nil || g < 3+190 {
		t.Fatalf("granted %d (%v) after 200 redis-benchmark calls, want about 203", g, err)
	}
}
