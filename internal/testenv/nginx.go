package testenv

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/failopenmap"
	"github.com/anteroom/anteroom/internal/loopback"
)

// Nginx is a running nginx (Debian's nginx-light is enough) serving one
// site configuration on a loopback port.
type Nginx struct {
	addr string
}

// URL returns the site's base URL, http://127.0.0.1:port.
func (n *Nginx) URL() string { return "http://" + n.addr }

// StartNginx runs nginx with site, a configuration for the http {} context
// in which the string "listen 80;" is replaced by a free loopback port. The
// main configuration, pid file, logs and temporary files live in a
// t.TempDir; nginx runs in the foreground as one process and is stopped on
// cleanup. A missing nginx skips the test (fails it under CI=true).
//
// A site that includes the gateway's fail-open map at its installed path
// (failopenmap.Path, as deploy/gateway's files do) gets an empty one in
// the temporary directory instead: no fail-open. A test of the fail-open
// replaces the path with its own file first.
func StartNginx(t testing.TB, site string) *Nginx {
	t.Helper()
	bin := Binary(t, "nginx")
	dir := t.TempDir()
	if !strings.Contains(site, "listen 80;") {
		t.Fatal(`testenv: nginx site has no "listen 80;" to replace`)
	}
	if strings.Contains(site, failopenmap.Path) {
		empty := filepath.Join(dir, "anteroom-fail-open.map")
		if err := os.WriteFile(empty, []byte(failopenmap.Map(time.Time{}, "testenv")), 0o600); err != nil {
			t.Fatalf("testenv: %v", err)
		}
		site = strings.ReplaceAll(site, failopenmap.Path, empty)
	}
	const attempts = 5
	var lastErr error
	for i := 0; i < attempts; i++ {
		port, err := loopback.FreePort()
		if err != nil {
			t.Fatalf("testenv: free port: %v", err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		conf := strings.Replace(site, "listen 80;", "listen "+addr+";", 1)
		if err := writeNginxConf(dir, conf); err != nil {
			t.Fatalf("testenv: %v", err)
		}
		p, err := startProcess(bin, []string{"-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log")}, dir)
		if err != nil {
			t.Fatalf("testenv: start nginx: %v", err)
		}
		t.Cleanup(func() {
			if !p.signalAndWait(syscall.SIGQUIT, readyTimeout) {
				p.kill()
			}
		})
		if lastErr = waitListening(p, addr); lastErr == nil {
			return &Nginx{addr: addr}
		}
		p.kill()
		if !strings.Contains(tailFile(filepath.Join(dir, "error.log"), 5), "in use") {
			break
		}
	}
	t.Fatalf("testenv: start nginx: %v; log:%s", lastErr, tailFile(filepath.Join(dir, "error.log"), 20))
	return nil
}

// writeNginxConf writes the main configuration around the site.
func writeNginxConf(dir, site string) error {
	if err := os.WriteFile(filepath.Join(dir, "site.conf"), []byte(site), 0o600); err != nil {
		return err
	}
	main := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 128; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/site.conf;
}
`, dir)
	return os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o600)
}

// waitListening polls until addr accepts connections or p exits.
func waitListening(p *process, addr string) error {
	return poll(readyTimeout, func() error {
		if p.exited() {
			return fmt.Errorf("%w: nginx exited: %v", errStop, p.err)
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return fmt.Errorf("nginx not listening on %s after %s: %w", addr, readyTimeout, err)
		}
		_ = c.Close()
		return nil
	})
}
