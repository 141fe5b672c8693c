package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
)

var shardMetric = regexp.MustCompile(`([0-9.]+) ([a-zµ/-]+)-S(1|16)\b`)

// measureShards runs queue.BenchmarkShardedJoins: one event's joins on a
// 3-master Redis Cluster with S = 1 against S = 16 join shards, in
// alternating rounds of the same load generator, and reports joins/s and
// the ceiling the busiest master's Redis CPU per join allows.
func measureShards(r *report) error {
	args := []string{"test", "-run", "^$", "-bench", "ShardedJoins", "-benchtime", "1x", "./queue"}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go test: %v %s", err, out)
	}
	m := map[string]float64{}
	for _, x := range shardMetric.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(x[1]), 64)
		m[string(x[2])+"-S"+string(x[3])] = v
	}
	j1, j16, c1, c16 := m["joins/s-S1"], m["joins/s-S16"], m["ceiling-joins/s-S1"], m["ceiling-joins/s-S16"]
	if j1 == 0 || j16 == 0 || c1 == 0 || c16 == 0 {
		return fmt.Errorf("no joins/s-S1, -S16 in %s", out)
	}
	r.command("go " + fmt.Sprint(args) + "   # 3 rounds each of S = 1 and S = 16, alternating, 64 workers, 5 s")
	r.add("one event's joins/s on 3 masters, S = 16 vs S = 1 join shards", fmt.Sprintf("%.0f/s", j16), fmt.Sprintf("%.0f/s", j1), j16/j1, "≥ 2× where cores allow", j16/j1 >= 2)
	r.add("one event's join ceiling from the busiest master's Redis CPU per join, S = 16 vs S = 1", fmt.Sprintf("%.0f/s", c16), fmt.Sprintf("%.0f/s", c1), c16/c1, "≥ 2×", c16/c1 >= 2)
	r.note(fmt.Sprintf("join shards: Redis CPU per join %.1f µs (S = 1, all on one master) and %.1f µs (S = 16, over three); the busiest master %.1f and %.1f µs", m["redis-µs/join-S1"], m["redis-µs/join-S16"], m["busiest-µs/join-S1"], m["busiest-µs/join-S16"]))
	return nil
}
