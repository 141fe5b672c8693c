package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/loopback"
)

// Proxy is a running reverse proxy (Caddy, HAProxy) serving one
// configuration on a loopback port.
type Proxy struct {
	addr string
}

// URL returns the proxy's base URL, http://127.0.0.1:port.
func (p *Proxy) URL() string { return "http://" + p.addr }

// proxyRun says how to run one proxy: its binary, the text of its
// configuration that names the listening address, and how to write and
// start a configuration in dir.
type proxyRun struct {
	name   string // the binary, and the name in messages
	listen string // the text in the configuration replaced by the address
	// replace returns what stands for listen with the proxy on addr.
	replace func(addr string) string
	// args returns the command line for the configuration file conf.
	args func(conf string) []string
	file string   // the configuration's file name in dir
	env  []string // added to the environment, with dir for "%s"
}

// startProxy runs r with conf on a free loopback port, retrying a few
// times when the port is taken between its choice and the proxy's bind.
// The proxy's output goes to a log file in a t.TempDir, quoted when it
// fails to start; it is stopped (SIGTERM, then SIGKILL) on cleanup. A
// missing binary skips the test (fails it under CI=true).
func startProxy(t testing.TB, r proxyRun, conf string) *Proxy {
	t.Helper()
	bin := Binary(t, r.name)
	dir := t.TempDir()
	if !strings.Contains(conf, r.listen) {
		t.Fatalf("testenv: %s configuration has no %q to replace", r.name, r.listen)
	}
	logPath := filepath.Join(dir, r.name+".log")
	var lastErr error
	for i := 0; i < 5; i++ {
		port, err := loopback.FreePort()
		if err != nil {
			t.Fatalf("testenv: free port: %v", err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		path := filepath.Join(dir, r.file)
		if err := os.WriteFile(path, []byte(strings.Replace(conf, r.listen, r.replace(addr), 1)), 0o600); err != nil {
			t.Fatalf("testenv: %v", err)
		}
		p, err := startLogged(bin, r.args(path), dir, logPath, r.env)
		if err != nil {
			t.Fatalf("testenv: start %s: %v", r.name, err)
		}
		t.Cleanup(func() {
			if !p.signalAndWait(syscall.SIGTERM, readyTimeout) {
				p.kill()
			}
		})
		if lastErr = waitProxy(p, r.name, addr); lastErr == nil {
			return &Proxy{addr: addr}
		}
		p.kill()
		if !strings.Contains(tailFile(logPath, 20), "in use") {
			break
		}
	}
	t.Fatalf("testenv: start %s: %v; log:%s", r.name, lastErr, tailFile(logPath, 20))
	return nil
}

// startLogged starts bin with args in dir, its output appended to logPath
// and env (with dir for "%s") added to its environment.
func startLogged(bin string, args []string, dir, logPath string, env []string) (*process, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = os.Environ()
	for _, e := range env {
		cmd.Env = append(cmd.Env, strings.ReplaceAll(e, "%s", dir))
	}
	return startCmd(cmd)
}

// waitProxy polls until addr accepts connections or p exits.
func waitProxy(p *process, name, addr string) error {
	return poll(readyTimeout, func() error {
		if p.exited() {
			return fmt.Errorf("%w: %s exited: %v", errStop, name, p.err)
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return fmt.Errorf("%s not listening on %s after %s: %w", name, addr, readyTimeout, err)
		}
		_ = c.Close()
		return nil
	})
}

// StartCaddy runs caddy (Debian's caddy 2.6 is enough) with caddyfile, a
// Caddyfile whose site address ":80 {" is replaced by a free port bound
// on loopback only. Caddy's data and configuration directories are in a t.TempDir.
func StartCaddy(t testing.TB, caddyfile string) *Proxy {
	t.Helper()
	return startProxy(t, proxyRun{
		name: "caddy", listen: ":80 {", file: "Caddyfile",
		replace: func(addr string) string {
			host, port, _ := net.SplitHostPort(addr)
			return ":" + port + " {\n\tbind " + host
		},
		args: func(conf string) []string { return []string{"run", "--adapter", "caddyfile", "--config", conf} },
		env:  []string{"HOME=%s", "XDG_DATA_HOME=%s/data", "XDG_CONFIG_HOME=%s/config"},
	}, caddyfile)
}

// StartHAProxy runs haproxy (Debian's haproxy 2.6, built with Lua) in the
// foreground with cfg, a configuration whose "bind :80" is replaced by a
// free loopback port. A lua-load path in cfg is left as the caller made
// it.
func StartHAProxy(t testing.TB, cfg string) *Proxy {
	t.Helper()
	return startProxy(t, proxyRun{
		name: "haproxy", listen: "bind :80", file: "haproxy.cfg",
		replace: func(addr string) string { return "bind " + addr },
		args:    func(conf string) []string { return []string{"-db", "-f", conf} },
	}, cfg)
}
