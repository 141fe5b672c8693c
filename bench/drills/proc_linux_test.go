//go:build drills && linux

package drills

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill a child process when the test binary
// dies (a go test -timeout panic skips the cleanups), so none outlives
// its drill.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
