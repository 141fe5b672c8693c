package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/luascript"
)

var (
	rbRate   = regexp.MustCompile(`([0-9.]+) requests per second`)
	rbReplID = regexp.MustCompile(`master_replid:(\w+)`)
)

// measureRedisBenchmark runs redis-benchmark -c 50 with EVALSHA of the
// claim script itself (one grant per call for a random user, on one bucket
// of the same redis-server) beside the end-to-end claims.
func measureRedisBenchmark(ctx context.Context, s *stack, r *report) error {
	rate, err := evalshaRate(ctx, s.redisAddr)
	if err != nil {
		return err
	}
	r.peaks["evalsha"] = rate
	r.command("redis-benchmark -c 50 -n 200000 -r 100000000 EVALSHA <claim.lua> 9 <bucket keys> …   # one grant per call, random users")
	claims := r.peaks["claim"]
	ratio := claims / rate
	r.add("granted claims/s end to end vs redis-benchmark EVALSHA of the claim script", fmt.Sprintf("%.0f/s", claims), fmt.Sprintf("%.0f/s", rate), ratio, "≥ 0.5", ratio >= 0.5)
	return nil
}

// evalshaRate runs redis-benchmark -c 50 with EVALSHA of claim.lua (its
// prelude included) on the redis-server at addr and returns calls/s.
func evalshaRate(ctx context.Context, addr string) (float64, error) {
	src, err := os.ReadFile("claim/claim.lua")
	if err != nil {
		return 0, fmt.Errorf("run the harness from the repository root: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	sha, err := c.ScriptLoad(ctx, luascript.Source(string(src))).Result()
	if err != nil {
		return 0, err
	}
	tag := "ar:{rb#0}:"
	if err := c.Set(ctx, tag+"stock", 1_000_000_000, 0).Err(); err != nil {
		return 0, err
	}
	// The bucket is laid on this server: it records the server's
	// replication id, as Lay does (claim.lua refuses a bucket without one).
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	replid := ""
	if m := rbReplID.FindStringSubmatch(info); m != nil {
		replid = m[1]
	}
	if err := c.HSet(ctx, tag+"stats", "epoch", replid).Err(); err != nil {
		return 0, err
	}
	payload := `{"type":"granted","event":"rb","claim_id":"0-__rand_int__","user":"__rand_int__","pos":1,"units":1,"at":"2026-01-01T00:00:00Z","idem":"k"}`
	host, port, _ := strings.Cut(addr, ":")
	args := []string{"-h", host, "-p", port, "-n", "200000", "-c", "50", "-r", "100000000", "-q",
		"EVALSHA", sha, "9",
		tag + "stock", tag + "claims", tag + "outbox", tag + "stats", tag + "exp", tag + "frozen",
		tag + "uc:__rand_int__", tag + "ua:__rand_int__", tag + "idem:__rand_int__",
		"__rand_int__", "1", "0-__rand_int__", payload, "1", "k", "86400", "900000"}
	out, err := exec.Command("redis-benchmark", args...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark: %v %s", err, out)
	}
	m := rbRate.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("redis-benchmark: no rate in %s", out)
	}
	rate, _ := strconv.ParseFloat(string(m[len(m)-1][1]), 64)
	if g, _ := c.HGet(ctx, tag+"stats", "granted").Int(); g < 100_000 {
		return 0, fmt.Errorf("redis-benchmark granted only %d claims: the script did not run as a claim", g)
	}
	return rate, nil
}
