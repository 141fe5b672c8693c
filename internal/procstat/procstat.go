// Package procstat reads CPU time from Linux's /proc, for the benchmark
// harness and the load generator, which report what the servers they
// start cost per request. Where there is no /proc every reading is 0.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// tick is the kernel's clock tick as /proc reports times in (USER_HZ, 100
// on every Linux that matters here).
const tick = 10 * time.Millisecond

// CPU is the CPU time (user + system) process pid has used, from
// /proc/pid/stat; 0 where there is no such file.
func CPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	// utime and stime are the 14th and 15th fields, after the
	// parenthesised command name (which may hold spaces).
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * tick
}

// Machine is the busy and total CPU time of the whole machine, from
// /proc/stat: every process, the other tenants of a shared machine too.
func Machine() (busy, total time.Duration) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		switch {
		case i == 3 || i == 4: // idle, iowait
			total += time.Duration(n) * tick
		case i < 8: // user nice system irq softirq steal
			busy += time.Duration(n) * tick
			total += time.Duration(n) * tick
		}
	}
	return busy, total
}
