//go:build drills && !linux

package drills

import "os/exec"

// setProcAttr does nothing outside Linux; the test's cleanups kill the
// child processes.
func setProcAttr(cmd *exec.Cmd) {}
