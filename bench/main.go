// Command bench measures anteroom on this machine, each figure beside its
// ceiling and its naive alternative, in one run, and writes
// bench/RESULTS.md and bench/throughput.svg.
//
//	go run ./bench            # about 6 minutes on 2 cores
//	go run ./bench -d 3s      # a quick pass
//	go run ./bench -steps status,join,openloop -mem-users 0 -out /tmp/b   # some steps
//	go run ./bench -steps claims,redis,r3 -before /tmp/anteroom-main     # the R3 cluster, two builds side by side
//
// It needs redis-server, redis-benchmark, wrk and PostgreSQL (initdb,
// pg_ctl, pgbench): apt-get install redis-server redis-tools wrk postgresql.
// These are benchmarks, not tests: nothing here asserts a timing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	d := flag.Duration("d", 10*time.Second, "duration of each closed-loop measurement")
	out := flag.String("out", "bench", "directory for RESULTS.md and throughput.svg")
	memUsers := flag.Int("mem-users", 1_000_000, "joins for the memory measurement (0 skips it)")
	only := flag.String("steps", "", "comma-separated steps to run (status, join, curve, claims, redis, postgres, openloop, ext, r3, shards); empty: all")
	node := flag.String("bin", "", "a prebuilt anteroom binary to measure instead of building ./cmd/anteroom (to compare builds under the same generator)")
	before := flag.String("before", "", "a prebuilt anteroom binary (the build before a change) whose claims on the R3 cluster are measured beside this build's, in the same run")
	flag.StringVar(&profileDir, "profiles", "", "a directory to keep the node's CPU profiles in (with the binary they profile), for go tool pprof; empty: they are removed with the run's files")
	flag.Parse()
	if err := run(context.Background(), *d, *out, *memUsers, *only, *node, *before); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, d time.Duration, out string, memUsers int, only, node, before string) error {
	if err := need("redis-server", "redis-benchmark", "redis-cli", "wrk", "pgbench", "go"); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "anteroom-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "anteroom")
	ceil := filepath.Join(dir, "ceiling")
	builds := map[string]string{bin: "./cmd/anteroom", ceil: "./bench/ceiling"}
	if node != "" {
		delete(builds, bin)
		bin = node
	}
	for target, pkg := range builds {
		if b, err := exec.Command("go", "build", "-o", target, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v: %s", pkg, err, b)
		}
	}
	rep := newReport(d)
	if before != "" {
		rep.flags = " -before <the build before>"
	}
	env, err := startStack(dir, bin, ceil)
	if err != nil {
		return err
	}
	defer env.stop()
	env.bin, env.before = bin, before
	steps := []struct {
		key, name string
		f         func(context.Context, *stack, *report) error
	}{
		{"status", "http ceiling and status", measureStatus},
		{"join", "join", measureJoin},
		{"curve", "throughput against concurrency", measureCurve},
		{"claims", "claims end to end", measureClaims},
		{"redis", "redis-benchmark EVALSHA", measureRedisBenchmark},
		{"postgres", "PostgreSQL SELECT FOR UPDATE", measurePostgres},
		{"openloop", "open-loop latency", measureOpenLoop},
		{"ext", "the operators' smallest shape: a node on one external NATS server and a redis-server", measureExternal},
		{"r3", "the production shape: nodes on a 3-server NATS cluster (R3 streams), redis-server and a 3-master Redis Cluster", measureR3},
	}
	for _, s := range steps {
		if only != "" && !slices.Contains(strings.Split(only, ","), s.key) {
			continue
		}
		fmt.Fprintf(os.Stderr, "bench: %s…\n", s.name)
		if err := s.f(ctx, env, rep); err != nil {
			rep.note(fmt.Sprintf("%s failed: %v", s.name, err))
			fmt.Fprintf(os.Stderr, "bench: %s failed: %v\n", s.name, err)
		}
	}
	if only == "" || slices.Contains(strings.Split(only, ","), "shards") {
		fmt.Fprintln(os.Stderr, "bench: one event's joins over join shards on a 3-master cluster…")
		if err := measureShards(rep); err != nil {
			rep.note(fmt.Sprintf("join shards failed: %v", err))
		}
	}
	if memUsers > 0 {
		fmt.Fprintln(os.Stderr, "bench: redis memory per waiting user…")
		if err := measureMemory(rep, memUsers); err != nil {
			rep.note(fmt.Sprintf("memory failed: %v", err))
		}
	}
	return rep.write(out)
}
