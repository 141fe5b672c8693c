package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/claim"
)

var rbRate = regexp.MustCompile(`([0-9.]+) requests per second`)

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
// prelude included: claim.RedisBenchmark) on the redis-server at addr and
// returns calls/s.
func evalshaRate(ctx context.Context, addr string) (float64, error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	command, granted, err := claim.RedisBenchmark(ctx, c, 1_000_000_000)
	if err != nil {
		return 0, err
	}
	host, port, _ := strings.Cut(addr, ":")
	args := append([]string{"-h", host, "-p", port, "-n", "200000", "-c", "50", "-r", "100000000", "-q"}, command...)
	out, err := exec.Command("redis-benchmark", args...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("redis-benchmark: %v %s", err, out)
	}
	m := rbRate.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("redis-benchmark: no rate in %s", out)
	}
	rate, _ := strconv.ParseFloat(string(m[len(m)-1][1]), 64)
	if g, _ := granted(ctx); g < 100_000 {
		return 0, fmt.Errorf("redis-benchmark granted only %d claims: the script did not run as a claim", g)
	}
	return rate, nil
}
