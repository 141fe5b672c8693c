// Package testenv starts real servers for tests: redis-server processes, a
// Redis Cluster made of them, in-process NATS servers with JetStream,
// alone or clustered, and anteroom binaries as child processes sharing one
// deployment's secrets (Deployment, for the drills and the soak). It also
// holds the clients tests share (ConnectJS, WaitSynced), and runs the
// gateways in front of a node: nginx (StartNginx), Caddy (StartCaddy) and
// HAProxy (StartHAProxy). It never imports the node: tests that run nodes
// in-process use internal/nodetest.
//
// Every server listens on loopback (127.0.0.1) on a random port, keeps its
// data in a t.TempDir, and is stopped with t.Cleanup, so tests can run in
// parallel and leave nothing behind. Readiness is polled with a bounded
// deadline, never slept for; a server that does not come up fails the test
// with its last log lines.
//
// When a needed binary (redis-server, redis-cli, nginx, caddy, haproxy) is
// absent, the helpers call t.Skip with the reason, except when the
// environment variable CI is "true": then a missing server is a failure
// (t.Fatal), because .ci/run installs it.
//
// Redis 7 or later is needed (--cluster-port, CLUSTER ADDSLOTSRANGE); Debian
// 12's redis-server is 7.0.
//
// The helpers take testing.TB, call t.Helper and never panic. The returned
// values are safe for concurrent use by the test's goroutines; the methods
// that take a testing.TB must be called from the test's goroutine.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/loopback"
	"github.com/anteroom/anteroom/internal/wait"
)

// readyTimeout bounds every wait for a server to become ready.
const readyTimeout = 10 * time.Second

// pollInterval is how often a readiness condition is checked.
const pollInterval = 20 * time.Millisecond

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// port is released before returning, so another process may take it; the
// starters that use it retry with a new port when the bind fails.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := loopback.FreePort()
	if err != nil {
		t.Fatalf("testenv: free port: %v", err)
	}
	return p
}

// inCI reports whether missing servers must fail rather than skip.
func inCI() bool { return os.Getenv("CI") == "true" }

// Binary finds the program name (redis-server, chromium, curl…) on PATH or
// in /usr/bin, /usr/sbin and /usr/local/bin. When it is absent the test is
// skipped, or failed under CI=true, where scripts/install-deps.sh installs
// it.
func Binary(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/usr/local/bin"} {
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	msg := fmt.Sprintf("testenv: %s not found on PATH; run scripts/install-deps.sh", name)
	if inCI() {
		t.Fatal(msg + " [CI=true: a missing server is a failure]")
	}
	t.Skip(msg)
	return ""
}

// poll calls cond every pollInterval until it returns nil or timeout has
// passed; it returns cond's last error in that case.
func poll(timeout time.Duration, cond func() error) error {
	return wait.Until(timeout, pollInterval, func() error {
		err := cond()
		if errors.Is(err, errStop) {
			return wait.Stop(err)
		}
		return err
	})
}

// errStop, wrapped into a condition's error, ends poll early: waiting longer
// cannot help (for example, the process has exited).
var errStop = errors.New("gave up")
