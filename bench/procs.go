package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/loopback"
	"github.com/anteroom/anteroom/internal/wait"
)

// proc is a child process the harness owns.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
}

func start(dir, name, bin string, env []string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &proc{name: name, cmd: cmd, log: logPath}, nil
}

func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// poll calls ok every 20 ms until it returns true or d passes.
func poll(d time.Duration, what string, ok func() bool) error {
	return wait.Until(d, 20*time.Millisecond, func() error {
		if ok() {
			return nil
		}
		return fmt.Errorf("timed out waiting for %s", what)
	})
}

func startRedis(dir string) (*proc, string, error) {
	port, err := loopback.FreePort()
	if err != nil {
		return nil, "", err
	}
	p, err := start(dir, "redis", "redis-server", nil, "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no")
	if err != nil {
		return nil, "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	err = poll(10*time.Second, "redis-server", func() bool { return rdb.Ping(context.Background()).Err() == nil })
	return p, addr, err
}

// startHTTP starts an HTTP server process and waits until GET path answers.
func startHTTP(dir, name, bin string, port int, path string, env []string, args ...string) (*proc, error) {
	p, err := start(dir, name, bin, env, args...)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("http://127.0.0.1:%d%s", port, path)
	err = poll(30*time.Second, name, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode < 500
	})
	if err != nil {
		p.stop()
		b, _ := os.ReadFile(p.log)
		return nil, fmt.Errorf("%w; log: %s", err, tail(string(b), 800))
	}
	return p, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// need reports the first missing tool.
func need(tools ...string) error {
	var missing []string
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return errors.New("missing tools: " + strings.Join(missing, ", ") + " (apt-get install redis-server redis-tools wrk postgresql)")
	}
	return nil
}
