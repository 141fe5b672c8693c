//go:build soak && linux

package soak

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// deployment is what every process of the soak shares: the ticket secret,
// the signing key directory and the admin token, as nodes behind one load
// balancer do. (The drills' nodes_test.go does the same for its drills;
// test files cannot be imported, so the few lines are repeated here.)
type deployment struct {
	dir    string
	admin  string
	secret []byte
	keys   string
	bin    string
}

func newDeployment(dir string) (*deployment, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	dp := &deployment{dir: dir, admin: hex.EncodeToString(tok), secret: secret, keys: filepath.Join(dir, "keys")}
	dp.bin = filepath.Join(dir, "anteroom")
	out, err := exec.Command("go", "build", "-o", dp.bin, "github.com/anteroom/anteroom/cmd/anteroom").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	return dp, nil
}

// proc is `anteroom <command>` running as a child process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// spawn runs the anteroom binary with args and the deployment's settings
// plus env ("ANTEROOM_X=v"), logging to <name>.log (appended across
// restarts).
func (dp *deployment) spawn(name string, env []string, args ...string) (*proc, error) {
	p := &proc{name: name, log: filepath.Join(dp.dir, name+".log"), exited: make(chan struct{})}
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	p.cmd = exec.Command(dp.bin, args...)
	p.cmd.Env = append(cleanEnv(), "ANTEROOM_DATA_DIR="+filepath.Join(dp.dir, name), "ANTEROOM_ADMIN_TOKEN="+dp.admin,
		"ANTEROOM_TICKET_SECRET="+hex.EncodeToString(dp.secret), "ANTEROOM_SIGNING_KEYS="+dp.keys,
		"ANTEROOM_LOG_FORMAT=text", "ANTEROOM_DRAIN_DELAY=0s",
		// The soak's crowd plays the gateway: X-User-ID from loopback, so
		// the per-IP join budget (anonymous mode only) does not apply.
		"ANTEROOM_IDENTITY=header", "ANTEROOM_TRUSTED_PROXIES=127.0.0.1")
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// cleanEnv is the environment without ANTEROOM_* settings of the caller.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ANTEROOM_") {
			out = append(out, kv)
		}
	}
	return out
}

// kill sends SIGKILL and waits for the process to end.
func (p *proc) kill() {
	if p == nil || !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tail returns the last n lines of the process's log.
func (p *proc) tail(n int) string {
	raw, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// waitReady polls url/readyz until it answers 200.
func waitReady(p *proc, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if !p.running() || time.Now().After(deadline) {
			return fmt.Errorf("%s not ready (running %v):\n%s", p.name, p.running(), p.tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var adminClient = &http.Client{Timeout: 30 * time.Second}

// adminCall sends an admin request and returns the status and body.
func (dp *deployment) adminCall(base, method, path string, body []byte) (int, []byte) {
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Header.Set("Authorization", "Bearer "+dp.admin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := adminClient.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}
