package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// procCPU is the CPU time (user + system) process pid has used, from
// /proc/pid/stat; 0 where there is no /proc.
func procCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	// utime and stime are the 14th and 15th fields, after the
	// parenthesised command name, in clock ticks (100 a second).
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// cpuCost is the CPU each of some processes used per request.
type cpuCost []time.Duration

// total is the processes' CPU per request together.
func (c cpuCost) total() time.Duration {
	var t time.Duration
	for _, d := range c {
		t += d
	}
	return t
}

// cpuPerRequest runs f (a wrk run) and returns its result with the CPU
// each of the given processes used per request answered: the servers' own
// cost, which the load generator sharing the cores does not move much,
// unlike requests/s.
func cpuPerRequest(f func() (wrkResult, error), procs ...*proc) (wrkResult, cpuCost, error) {
	before := make([]time.Duration, len(procs))
	for i, p := range procs {
		before[i] = procCPU(p.cmd.Process.Pid)
	}
	res, err := f()
	if err != nil || res.Requests == 0 {
		return res, nil, err
	}
	cost := make(cpuCost, len(procs))
	for i, p := range procs {
		cost[i] = (procCPU(p.cmd.Process.Pid) - before[i]) / time.Duration(res.Requests)
	}
	return res, cost, nil
}
