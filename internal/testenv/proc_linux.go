package testenv

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the kernel kill the server if the test binary dies
// (for example on a go test -timeout panic), so no server outlives its test.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
