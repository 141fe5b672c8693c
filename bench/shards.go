package main

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
)

var shardMetric = regexp.MustCompile(`([0-9.]+) ([a-zµ/-]+)-S(1|16)\b`)

// measureShards runs queue.BenchmarkShardedJoins: one event's joins on a
// 3-master Redis Cluster with S = 1 against S = 16 join shards, in
// alternating rounds of the same load generator, and reports joins/s and
// the ceiling the busiest master's Redis CPU per join allows. It runs with
// 1024 joins in flight, as a node has in a sale's first minute, and notes
// the figures at 64: concurrent joins of one queue share a script call, so
// at low concurrency S = 1's one queue batches better than each of 16
// shards does, and the measurement shows the batching, not the masters.
func measureShards(r *report) error {
	args := []string{"test", "-run", "^$", "-bench", "ShardedJoins", "-benchtime", "1x", "./queue"}
	m, err := shardRun(args, 1024)
	if err != nil {
		return err
	}
	j1, j16, c1, c16 := m["joins/s-S1"], m["joins/s-S16"], m["ceiling-joins/s-S1"], m["ceiling-joins/s-S16"]
	r.command("ANTEROOM_BENCH_WORKERS={1024,64} go " + fmt.Sprint(args) + "   # 3 rounds each of S = 1 and S = 16, alternating, 5 s each")
	r.add("one event's joins/s on 3 masters, S = 16 vs S = 1 join shards (1024 in flight)", fmt.Sprintf("%.0f/s", j16), fmt.Sprintf("%.0f/s", j1), j16/j1, "≥ 2× where cores allow", j16/j1 >= 2)
	r.add("one event's join ceiling from the busiest master's Redis CPU per join, S = 16 vs S = 1 (1024 in flight)", fmt.Sprintf("%.0f/s", c16), fmt.Sprintf("%.0f/s", c1), c16/c1, "≥ 2×", c16/c1 >= 2)
	r.note(fmt.Sprintf("join shards, 1024 in flight: Redis CPU per join %.1f µs (S = 1, all on one master) and %.1f µs (S = 16, over three); the busiest master %.1f and %.1f µs", m["redis-µs/join-S1"], m["redis-µs/join-S16"], m["busiest-µs/join-S1"], m["busiest-µs/join-S16"]))
	low, err := shardRun(args, 64)
	if err != nil {
		return err
	}
	r.note(fmt.Sprintf("join shards, 64 in flight: %.0f vs %.0f joins/s (S = 16 vs 1); Redis CPU per join %.1f and %.1f µs; the busiest master's ceiling %.0f vs %.0f joins/s (%.2f×): each of 16 shards gets a sixteenth of the batch", low["joins/s-S16"], low["joins/s-S1"], low["redis-µs/join-S16"], low["redis-µs/join-S1"], low["ceiling-joins/s-S16"], low["ceiling-joins/s-S1"], low["ceiling-joins/s-S16"]/low["ceiling-joins/s-S1"]))
	return nil
}

// shardRun runs the benchmark with workers goroutines and returns its
// metrics by name and S.
func shardRun(args []string, workers int) (map[string]float64, error) {
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("ANTEROOM_BENCH_WORKERS=%d", workers))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test: %v %s", err, out)
	}
	m := map[string]float64{}
	for _, x := range shardMetric.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(x[1]), 64)
		m[string(x[2])+"-S"+string(x[3])] = v
	}
	if m["joins/s-S1"] == 0 || m["joins/s-S16"] == 0 || m["ceiling-joins/s-S1"] == 0 || m["ceiling-joins/s-S16"] == 0 {
		return nil, fmt.Errorf("no joins/s-S1, -S16 in %s", out)
	}
	return m, nil
}
