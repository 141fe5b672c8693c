//go:build linux

package procstat

import (
	"os"
	"testing"
	"time"
)

// TestCPUCountsWork: this process's CPU time grows by about the work it
// does, and the machine's busy time by at least as much; an unknown pid
// reads 0.
func TestCPUCountsWork(t *testing.T) {
	before := CPU(os.Getpid())
	busy0, total0 := Machine()
	deadline := time.Now().Add(300 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	used := CPU(os.Getpid()) - before
	busy1, total1 := Machine()
	if used < 100*time.Millisecond {
		t.Errorf("spinning 300 ms counted %v of CPU", used)
	}
	if busy1-busy0 < used/2 || total1-total0 < busy1-busy0 {
		t.Errorf("machine: busy %v of %v, this process %v", busy1-busy0, total1-total0, used)
	}
	if got := CPU(1 << 30); got != 0 {
		t.Errorf("an unknown pid read %v", got)
	}
}
