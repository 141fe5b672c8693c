// Package procstat reads what Linux's /proc says about a process, for the
// programs that measure the processes they start: the benchmark harness
// and the million-user demo stack.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPU is the CPU time (user + system) process pid has used, from
// /proc/pid/stat; 0 where there is no /proc or no such process.
func CPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	// utime and stime are the 14th and 15th fields, after the
	// parenthesised command name, in clock ticks (100 a second).
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
