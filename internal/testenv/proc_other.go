//go:build !linux

package testenv

import "os/exec"

// setProcAttr does nothing outside Linux; t.Cleanup stops the servers.
func setProcAttr(cmd *exec.Cmd) {}
