package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
)

var memMetric = regexp.MustCompile(`([0-9.]+) redis-bytes/user`)

// measureMemory joins users to one event on a fresh redis-server through the
// queue's own join script (queue.BenchmarkJoinMemory) and reports used
// memory per waiting user.
func measureMemory(r *report, users int) error {
	args := []string{"test", "-run", "^$", "-bench", "JoinMemory", "-benchtime", fmt.Sprintf("%dx", users), "./queue"}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go test: %v %s", err, out)
	}
	m := memMetric.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("no redis-bytes/user in %s", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	r.command("go " + fmt.Sprint(args))
	r.add(fmt.Sprintf("Redis memory per waiting user at %d joins", users), fmt.Sprintf("%.1f bytes", v), "", 0, "≤ 100 bytes", v <= 100)
	return nil
}
