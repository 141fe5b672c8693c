package testenv

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATS is one in-process nats-server with JetStream on 127.0.0.1, shut down
// when the test ends. Its methods are safe for concurrent use.
type NATS struct {
	cfg natsConfig

	mu  sync.Mutex
	srv *server.Server
	log *natsLog
}

// natsConfig is what stays the same across restarts of one server.
type natsConfig struct {
	name        string
	port        int // -1 until the first start has picked one
	storeDir    string
	clusterName string // "" for a standalone server
	clusterPort int
	routes      []*url.URL
}

// options builds fresh server options; the server keeps and may change the
// ones it is given, so each run gets its own.
func (c *natsConfig) options() *server.Options {
	o := &server.Options{
		ServerName:             c.name,
		Host:                   "127.0.0.1",
		Port:                   c.port,
		JetStream:              true,
		StoreDir:               c.storeDir,
		NoLog:                  true,
		NoSigs:                 true,
		DisableJetStreamBanner: true,
	}
	if c.clusterName != "" {
		o.Cluster.Name = c.clusterName
		o.Cluster.Host = "127.0.0.1"
		o.Cluster.Port = c.clusterPort
		o.Routes = c.routes
		// A system user for the cluster's own requests (a meta leader
		// step-down); every other client connects without credentials
		// to the global account, as before.
		sys := server.NewAccount(server.DEFAULT_SYSTEM_ACCOUNT)
		o.Accounts = []*server.Account{sys}
		o.SystemAccount = sys.Name
		o.Users = []*server.User{{Username: natsSystemUser, Password: natsSystemPassword, Account: sys}, {Username: natsAppUser}}
		o.NoAuthUser = natsAppUser
	}
	return o
}

// StartNATS starts an in-process nats-server with JetStream on a random
// port (Port: -1), its store in t.TempDir(), and waits until it accepts
// connections. It is shut down when the test ends.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	n := &NATS{cfg: natsConfig{name: "anteroom-test", port: -1, storeDir: t.TempDir()}}
	t.Cleanup(n.Shutdown)
	if err := n.start(); err != nil {
		t.Fatalf("testenv: start nats-server: %v", err)
	}
	return n
}

// start runs a new server with n.cfg and waits until it accepts clients
// (and routes, when clustered). It records the client port picked.
func (n *NATS) start() error {
	srv, err := server.NewServer(n.cfg.options())
	if err != nil {
		return err
	}
	log := &natsLog{}
	srv.SetLogger(log, false, false)
	srv.Start()

	err = poll(readyTimeout, func() error {
		if msg := log.fatal(); msg != "" {
			return fmt.Errorf("%w: %s", errStop, msg)
		}
		if !srv.ReadyForConnections(pollInterval) {
			return fmt.Errorf("not ready for connections")
		}
		return nil
	})
	if err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return fmt.Errorf("%s: %v; log:%s", n.cfg.name, err, log.tail())
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.srv, n.log = srv, log
	if n.cfg.port <= 0 {
		n.cfg.port = srv.Addr().(*net.TCPAddr).Port
	}
	return nil
}

// URL returns "nats://127.0.0.1:port". It stays the same across Restart.
func (n *NATS) URL() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(n.cfg.port))
}

// Server returns the running server (a new one after each Restart).
func (n *NATS) Server() *server.Server {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.srv
}

// StoreDir returns the JetStream store directory, kept across Restart.
func (n *NATS) StoreDir() string { return n.cfg.storeDir }

// Shutdown shuts the server down and waits until it has finished. It does
// nothing if the server is not running.
func (n *NATS) Shutdown() {
	n.mu.Lock()
	srv := n.srv
	n.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Shutdown()
	srv.WaitForShutdown()
}

// Restart shuts the server down if it is running and starts a new one on
// the same port with the same store dir, so JetStream data survives. It
// waits until the new server accepts connections.
func (n *NATS) Restart(t testing.TB) {
	t.Helper()
	n.Shutdown()
	if err := n.start(); err != nil {
		t.Fatalf("testenv: restart nats-server: %v", err)
	}
}

// natsLog keeps a server's last warnings and errors for failure messages.
type natsLog struct {
	mu       sync.Mutex
	lines    []string
	fatalMsg string
}

const natsLogKeep = 30

func (l *natsLog) add(level, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	msg := time.Now().Format("15:04:05.000") + " " + level + " " + fmt.Sprintf(format, v...)
	l.lines = append(l.lines, msg)
	if len(l.lines) > natsLogKeep {
		l.lines = l.lines[len(l.lines)-natsLogKeep:]
	}
	if level == "[FTL]" && l.fatalMsg == "" {
		l.fatalMsg = msg
	}
}

func (l *natsLog) fatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatalMsg
}

func (l *natsLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return " (empty)"
	}
	return "\n\t" + strings.Join(l.lines, "\n\t")
}

func (l *natsLog) Noticef(format string, v ...any) { l.add("[INF]", format, v...) }
func (l *natsLog) Warnf(format string, v ...any)   { l.add("[WRN]", format, v...) }
func (l *natsLog) Fatalf(format string, v ...any)  { l.add("[FTL]", format, v...) }
func (l *natsLog) Errorf(format string, v ...any)  { l.add("[ERR]", format, v...) }
func (l *natsLog) Debugf(format string, v ...any)  {}
func (l *natsLog) Tracef(format string, v ...any)  {}
