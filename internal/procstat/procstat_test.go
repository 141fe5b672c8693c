package procstat_test

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/procstat"
)

// TestCPU reads this test's own CPU time, which grows past 0 while it
// spins, and 0 for a process that does not exist.
func TestCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procstat reads Linux's /proc")
	}
	// Spin until the kernel has counted a clock tick (10 ms) of this
	// process, for at most 5 s of wall time.
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for procstat.CPU(os.Getpid()) <= 0 {
		if time.Now().After(deadline) {
			t.Fatal("CPU(self) stayed 0 for 5 s of spinning")
		}
		for i := range 1_000_000 {
			x ^= i
		}
	}
	_ = x
	if got := procstat.CPU(-1); got != 0 {
		t.Errorf("CPU(-1) = %v, want 0", got)
	}
}
