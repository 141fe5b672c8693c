package main

import (
	"time"

	"github.com/anteroom/anteroom/internal/procstat"
)

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

// cpuMeter notes the CPU procs have used so far; the function it returns
// gives what each used since, per one of n (requests, claims).
func cpuMeter(procs ...*proc) func(n float64) cpuCost {
	before := make([]time.Duration, len(procs))
	for i, p := range procs {
		before[i] = procstat.CPU(p.cmd.Process.Pid)
	}
	return func(n float64) cpuCost {
		cost := make(cpuCost, len(procs))
		for i, p := range procs {
			cost[i] = time.Duration(float64(procstat.CPU(p.cmd.Process.Pid)-before[i]) / n)
		}
		return cost
	}
}

// cpuPerRequest runs f (a wrk run) and returns its result with the CPU
// each of the given processes used per request answered: the servers' own
// cost, which the load generator sharing the cores does not move much,
// unlike requests/s.
func cpuPerRequest(f func() (wrkResult, error), procs ...*proc) (wrkResult, cpuCost, error) {
	per := cpuMeter(procs...)
	res, err := f()
	if err != nil || res.Requests == 0 {
		return res, nil, err
	}
	return res, per(float64(res.Requests)), nil
}
