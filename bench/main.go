// Command bench measures anteroom on this machine, each figure beside its
// ceiling and its naive alternative, in one run, and writes
// bench/RESULTS.md and bench/throughput.svg.
//
//	go run ./bench            # about 6 minutes on 2 cores
//	go run ./bench -d 3s      # a quick pass
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
	"time"
)

func main() {
	d := flag.Duration("d", 10*time.Second, "duration of each closed-loop measurement")
	out := flag.String("out", "bench", "directory for RESULTS.md and throughput.svg")
	memUsers := flag.Int("mem-users", 1_000_000, "joins for the memory measurement (0 skips it)")
	flag.Parse()
	if err := run(context.Background(), *d, *out, *memUsers); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, d time.Duration, out string, memUsers int) error {
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
	for target, pkg := range map[string]string{bin: "./cmd/anteroom", ceil: "./bench/ceiling"} {
		if b, err := exec.Command("go", "build", "-o", target, pkg).CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v: %s", pkg, err, b)
		}
	}
	rep := newReport(d)
	env, err := startStack(dir, bin, ceil)
	if err != nil {
		return err
	}
	defer env.stop()
	steps := []struct {
		name string
		f    func(context.Context, *stack, *report) error
	}{
		{"http ceiling and status", measureStatus},
		{"join", measureJoin},
		{"throughput against concurrency", measureCurve},
		{"claims end to end", measureClaims},
		{"redis-benchmark EVALSHA", measureRedisBenchmark},
		{"PostgreSQL SELECT FOR UPDATE", measurePostgres},
		{"open-loop latency", measureOpenLoop},
	}
	for _, s := range steps {
		fmt.Fprintf(os.Stderr, "bench: %s…\n", s.name)
		if err := s.f(ctx, env, rep); err != nil {
			rep.note(fmt.Sprintf("%s failed: %v", s.name, err))
			fmt.Fprintf(os.Stderr, "bench: %s failed: %v\n", s.name, err)
		}
	}
	fmt.Fprintln(os.Stderr, "bench: one event's joins over join shards on a 3-master cluster…")
	if err := measureShards(rep); err != nil {
		rep.note(fmt.Sprintf("join shards failed: %v", err))
	}
	if memUsers > 0 {
		fmt.Fprintln(os.Stderr, "bench: redis memory per waiting user…")
		if err := measureMemory(rep, memUsers); err != nil {
			rep.note(fmt.Sprintf("memory failed: %v", err))
		}
	}
	return rep.write(out)
}
