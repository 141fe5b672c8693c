package testenv

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

// Deployment is what every anteroom process of a drill or soak shares, as
// nodes behind one load balancer do: the ticket secret, the signing key
// directory and the admin token (both random), and the anteroom binary.
// Its methods return errors rather than failing a test, so a soak can
// restart processes from its own goroutines.
type Deployment struct {
	// Dir holds the processes' data directories and logs.
	Dir string
	// Bin is the anteroom binary Spawn runs (see BuildAnteroom).
	Bin string
	// Admin is the admin token every process accepts.
	Admin string
	// Secret is the ticket secret every process shares.
	Secret []byte
	// Keys is the signing key directory every process shares.
	Keys string
	// AdminTimeout bounds one AdminCall.
	//
	// Default: 30s
	AdminTimeout time.Duration
}

// NewDeployment returns a deployment in dir running bin, with a random
// ticket secret and admin token (nodes refuse weak ones).
func NewDeployment(dir, bin string) (*Deployment, error) {
	secret := make([]byte, 32)
	tok := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	return &Deployment{Dir: dir, Bin: bin, Admin: hex.EncodeToString(tok), Secret: secret,
		Keys: filepath.Join(dir, "keys"), AdminTimeout: 30 * time.Second}, nil
}

// BuildAnteroom builds cmd/anteroom into the file bin.
func BuildAnteroom(bin string) error {
	out, err := exec.Command("go", "build", "-o", bin, "github.com/anteroom/anteroom/cmd/anteroom").CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return nil
}

// Proc is `anteroom <command>` running as a child process.
type Proc struct {
	// Name names the process in logs; its log is <Dir>/<Name>.log.
	Name   string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// Spawn runs the deployment's binary with args, the deployment's settings
// and env ("ANTEROOM_X=v", later ones win), in header identity mode behind
// a loopback gateway (the crowd sends X-User-ID). Its data directory is
// <Dir>/<name>; it logs to <Dir>/<name>.log, appended across restarts; on
// Linux it dies with the test binary. The caller kills it.
func (d *Deployment) Spawn(name string, env []string, args ...string) (*Proc, error) {
	p := &Proc{Name: name, log: filepath.Join(d.Dir, name+".log"), exited: make(chan struct{})}
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	p.cmd = exec.Command(d.Bin, args...)
	p.cmd.Env = append(cleanEnv(), "ANTEROOM_DATA_DIR="+filepath.Join(d.Dir, name), "ANTEROOM_ADMIN_TOKEN="+d.Admin,
		"ANTEROOM_TICKET_SECRET="+hex.EncodeToString(d.Secret), "ANTEROOM_SIGNING_KEYS="+d.Keys,
		"ANTEROOM_LOG_FORMAT=text", "ANTEROOM_DRAIN_DELAY=0s",
		"ANTEROOM_IDENTITY=header", "ANTEROOM_TRUSTED_PROXIES=127.0.0.1",
		// Each process its own metrics port: the default (127.0.0.1:9100)
		// is one per host, and the tests run several nodes on one.
		"ANTEROOM_METRICS_ADDR=127.0.0.1:0")
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	setProcAttr(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// cleanEnv is the environment without the caller's ANTEROOM_* settings.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ANTEROOM_") {
			out = append(out, kv)
		}
	}
	return out
}

// Kill sends SIGKILL and waits for the process to end. A nil or ended
// process is left alone.
func (p *Proc) Kill() {
	if p == nil || !p.Running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Stop sends SIGTERM, as an orchestrator does to replace a process, and
// waits up to grace for it to exit by itself; then it SIGKILLs it. It
// returns nil when the process exited with status 0 within grace.
func (p *Proc) Stop(grace time.Duration) error {
	if p == nil {
		return nil
	}
	if p.Running() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("%s: %w", p.Name, p.err)
		}
		return nil
	case <-t.C:
		p.Kill()
		return fmt.Errorf("%s still running %s after SIGTERM: killed", p.Name, grace)
	}
}

// Running reports whether the process has not exited.
func (p *Proc) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Tail returns the last n lines of the process's log.
func (p *Proc) Tail(n int) string {
	raw, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// WaitReady polls base+"/readyz" until it answers 200. It gives up when
// the process exits or limit passes, with the log's last lines.
func (p *Proc) WaitReady(base string, limit time.Duration) error {
	ready := func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	err := poll(limit, func() error {
		switch {
		case ready():
			return nil
		case !p.Running():
			return fmt.Errorf("%w: %s exited", errStop, p.Name)
		}
		return fmt.Errorf("%s not ready", p.Name)
	})
	if err != nil {
		return fmt.Errorf("%v (running %v):\n%s", err, p.Running(), p.Tail(20))
	}
	return nil
}

// AdminCall sends an admin request with the deployment's token to base
// and returns the status and body; a request that cannot be sent gives
// status 0 and the error's text.
func (d *Deployment) AdminCall(base, method, path string, body []byte) (int, []byte) {
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Header.Set("Authorization", "Bearer "+d.Admin)
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: d.AdminTimeout}
	if d.AdminTimeout <= 0 {
		client.Timeout = 30 * time.Second
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}
