package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// process is one run of an external server binary.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when Wait has returned
	err  error         // Wait's result; read only after done is closed
}

// startProcess starts bin with args in dir. Output goes to the server's own
// log file, not to the test's.
func startProcess(bin string, args []string, dir string) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	return startCmd(cmd)
}

// startCmd starts cmd in a process group of its own and watches for its
// exit.
func startCmd(cmd *exec.Cmd) (*process, error) {
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signalAndWait sends sig and waits up to timeout for the process to end.
// It reports whether it ended.
func (p *process) signalAndWait(sig os.Signal, timeout time.Duration) bool {
	if p.exited() {
		return true
	}
	_ = p.cmd.Process.Signal(sig)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return true
	case <-timer.C:
		return false
	}
}

// kill ends the process with SIGKILL and waits (boundedly) for it. SIGKILL
// cannot be ignored, so the wait only runs out for a process stuck in the
// kernel, and nothing more could be done about that here.
func (p *process) kill() {
	p.signalAndWait(syscall.SIGKILL, readyTimeout)
}

// tailFile returns the last n lines of the file at path, for failure messages.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString("\n\t")
		sb.Write(l)
	}
	return sb.String()
}
