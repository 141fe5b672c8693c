//go:build linux

package procstat

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestCPUCountsWork: this process's CPU time grows by about the work it
// does, and the machine's busy time by at least as much; an unknown pid
// reads 0. The work is 300 ms of CPU as the kernel's getrusage counts it,
// not 300 ms of wall time: on a loaded machine a spinning goroutine gets
// a fraction of a core (the stressed CI run 12 counted 90 ms in 300 ms).
func TestCPUCountsWork(t *testing.T) {
	before := CPU(os.Getpid())
	busy0, total0 := Machine()
	start := rusageCPU(t)
	deadline := time.Now().Add(30 * time.Second)
	for x := 0; rusageCPU(t)-start < 300*time.Millisecond && time.Now().Before(deadline); x++ {
		for range 100000 {
			_ = x * x
		}
	}
	spun := rusageCPU(t) - start
	used := CPU(os.Getpid()) - before
	busy1, total1 := Machine()
	if spun < 300*time.Millisecond {
		t.Fatalf("the machine gave 30 s of spinning %v of CPU", spun)
	}
	if used < spun-50*time.Millisecond {
		t.Errorf("spinning %v of CPU (getrusage) counted %v", spun, used)
	}
	if busy1-busy0 < used/2 || total1-total0 < busy1-busy0 {
		t.Errorf("machine: busy %v of %v, this process %v", busy1-busy0, total1-total0, used)
	}
	if got := CPU(1 << 30); got != 0 {
		t.Errorf("an unknown pid read %v", got)
	}
}

// rusageCPU is this process's user and system time as getrusage says.
func rusageCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
