//go:build unix

// Package local_test runs deploy/local/run.sh: a Redis Cluster, a NATS
// cluster, two nodes and the order worker on loopback, and a sale across
// both nodes that must reconcile.
package local_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

func TestRunScriptBalances(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster, a NATS cluster and three anteroom processes")
	}
	for _, tool := range []string{"redis-server", "redis-cli", "curl"} {
		testenv.Binary(t, tool)
	}
	bash := testenv.Binary(t, "bash")
	goTool := testenv.Binary(t, "go")
	bin := filepath.Join(t.TempDir(), "anteroom")
	if out, err := exec.Command(goTool, "build", "-o", bin, "github.com/anteroom/anteroom/cmd/anteroom").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "run.sh")
	cmd.Env = append(os.Environ(), "ANTEROOM_BIN="+bin, "TMPDIR="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, so that nothing it started can outlive the
	// test; on timeout, SIGTERM lets its trap stop everything first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	err := cmd.Wait()
	text := out.String()
	if err != nil {
		t.Fatalf("run.sh: %v (after %v)\n%s", err, time.Since(start).Round(time.Second), text)
	}
	if !strings.Contains(text, "BALANCED") || strings.Contains(text, "DOES NOT BALANCE") {
		t.Fatalf("run.sh exited 0 without a balanced report:\n%s", text)
	}
	if strings.Contains(text, "SKIPPING the order worker") {
		t.Log("the order worker was skipped: this anteroom has no worker command")
	}
	if i := strings.Index(text, "reconciliation"); i >= 0 {
		t.Logf("after %v:\n%s", time.Since(start).Round(time.Second), text[i:])
	}
}
