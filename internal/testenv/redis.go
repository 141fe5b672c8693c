package testenv

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/loopback"
)

// Redis is one redis-server process on 127.0.0.1, started by StartRedis and
// killed when the test ends. Its methods are safe for concurrent use.
type Redis struct {
	bin  string
	port int
	dir  string
	args []string // the full command line after the binary; reused by Restart

	mu   sync.Mutex
	proc *process // the current run; nil before the first start
}

// RedisOption changes how StartRedis starts the server.
type RedisOption func(*redisConfig)

type redisConfig struct {
	replicaOf string
	cluster   bool
	args      []string
}

// WithReplicaOf starts the server as a replica of the server at addr
// ("host:port"). The replica answers before its first sync has finished;
// poll for the data you expect.
func WithReplicaOf(addr string) RedisOption {
	return func(c *redisConfig) { c.replicaOf = addr }
}

// WithArgs appends raw redis-server arguments, such as "--appendonly", "yes".
// They come after the defaults, so they override them.
func WithArgs(args ...string) RedisOption {
	return func(c *redisConfig) { c.args = append(c.args, args...) }
}

// withCluster enables cluster mode with a config file in the data dir and
// a cluster bus port of its own.
func withCluster() RedisOption {
	return func(c *redisConfig) { c.cluster = true }
}

// StartRedis starts redis-server on 127.0.0.1 on a free port with its data
// dir in t.TempDir(), without persistence (--save "" --appendonly no) and
// with protected mode off, and waits until it answers. The server is killed
// when the test ends.
func StartRedis(t testing.TB, opts ...RedisOption) *Redis {
	t.Helper()
	var cfg redisConfig
	for _, o := range opts {
		o(&cfg)
	}
	bin := Binary(t, "redis-server")
	dir := t.TempDir()
	r := &Redis{bin: bin, dir: dir}
	t.Cleanup(func() { r.kill() })

	// A port found free may be taken before redis-server binds it; then
	// the server exits at once and we try again with other ports.
	const attempts = 5
	var lastErr error
	for i := 0; i < attempts; i++ {
		port, err := loopback.FreePort()
		if err != nil {
			t.Fatalf("testenv: free port: %v", err)
		}
		args, err := cfg.commandLine(port, dir)
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		r.port, r.args = port, args
		lastErr = r.start()
		if lastErr == nil && cfg.replicaOf != "" {
			lastErr = r.waitLinked(t, cfg.replicaOf)
		}
		if lastErr == nil {
			return r
		}
		if !strings.Contains(lastErr.Error(), "in use") {
			break
		}
	}
	t.Fatalf("testenv: start redis-server: %v", lastErr)
	return nil
}

// waitLinked waits until replica r has synced with its primary. A
// primary takes a new replication id when its first replica attaches
// (the failover fences read it: internal/luascript's seqfence.lua), so a
// test that wrote before the link was up would see that change land
// between its writes, as a failover: a stressed CI run's
// TestRoomAfterLaggingFailover got seq 14 for its second entrant.
//
// The primary must also list it online: it does so only at the replica's
// first acknowledgement after the sync, a moment after the replica calls
// the link up, and until then a write's WAIT does not count it (a stressed
// CI run's TestPutWaitsForReplicas: a save answered before the replica
// had it).
func (r *Redis) waitLinked(t testing.TB, primary string) error {
	c := r.Client(t)
	p := redis.NewClient(&redis.Options{Addr: primary})
	defer p.Close()
	online := fmt.Sprintf("port=%d,state=online", r.port)
	return poll(linkTimeout, func() error {
		if ReplicationField(context.Background(), c, "master_link_status") != "up" {
			return fmt.Errorf("replica %s: the link to its primary is not up", r.Addr())
		}
		info, err := p.Info(context.Background(), "replication").Result()
		if err != nil || !strings.Contains(info, online) {
			return fmt.Errorf("replica %s: its primary %s does not list it online yet (%v)", r.Addr(), primary, err)
		}
		return nil
	})
}

// linkTimeout bounds a replica's first sync (a bound, not a timing).
const linkTimeout = 60 * time.Second

// commandLine builds redis-server's arguments for port and dir.
func (c *redisConfig) commandLine(port int, dir string) ([]string, error) {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--appendonly", "no",
		"--protected-mode", "no",
		"--daemonize", "no",
		// A primary otherwise waits 5 s before a replica's first sync.
		"--repl-diskless-sync-delay", "0",
		"--logfile", filepath.Join(dir, "redis.log"),
	}
	if c.replicaOf != "" {
		host, p, err := net.SplitHostPort(c.replicaOf)
		if err != nil {
			return nil, fmt.Errorf("replica of %q: %v", c.replicaOf, err)
		}
		args = append(args, "--replicaof", host, p)
	}
	if c.cluster {
		bus, err := loopback.FreePort()
		if err != nil {
			return nil, fmt.Errorf("free cluster bus port: %v", err)
		}
		args = append(args,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-port", strconv.Itoa(bus),
			"--cluster-node-timeout", "5000",
		)
	}
	return append(args, c.args...), nil
}

// start runs the server and polls until it serves commands, it exits, or
// readyTimeout passes. Readiness is probed with INFO so that the probes do
// not show up in CommandCount, and the answering server's process_id must be
// ours.
func (r *Redis) start() error {
	proc, err := startProcess(r.bin, r.args, r.dir)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.proc = proc
	r.mu.Unlock()

	addr := r.Addr()
	err = poll(readyTimeout, func() error {
		if proc.exited() {
			return fmt.Errorf("%w: redis-server exited (%v)", errStop, proc.err)
		}
		info, err := rawCommandTimeout(addr, time.Second, "INFO", "server", "persistence")
		if err != nil {
			return err
		}
		// Another process may have taken the port; then ours exits and
		// must not be mistaken for ready.
		if pid := infoField(info, "process_id"); pid != strconv.Itoa(proc.cmd.Process.Pid) {
			return fmt.Errorf("%s is served by process %s, not ours (%d)", addr, pid, proc.cmd.Process.Pid)
		}
		if infoField(info, "loading") != "0" {
			return fmt.Errorf("still loading")
		}
		return nil
	})
	if err != nil {
		proc.kill()
		return fmt.Errorf("%s not ready: %v; log:%s", addr, err, tailFile(r.logPath(), 15))
	}
	return nil
}

func (r *Redis) logPath() string { return filepath.Join(r.dir, "redis.log") }

// Addr returns "127.0.0.1:port". It stays the same across Restart.
func (r *Redis) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// URL returns "redis://127.0.0.1:port/0", as redis.ParseURL accepts.
func (r *Redis) URL() string { return "redis://" + r.Addr() + "/0" }

// Dir returns the server's data directory.
func (r *Redis) Dir() string { return r.dir }

// Client returns a new go-redis client for the server, closed when the test
// ends.
func (r *Redis) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Stop sends SIGTERM and waits for the server to exit. It does nothing if
// the server is not running.
func (r *Redis) Stop(t testing.TB) {
	t.Helper()
	p := r.current()
	if p == nil {
		return
	}
	if !p.signalAndWait(syscall.SIGTERM, readyTimeout) {
		p.kill()
		t.Fatalf("testenv: redis-server %s did not exit within %v of SIGTERM; killed it", r.Addr(), readyTimeout)
	}
}

// Kill sends SIGKILL and waits for the server to exit, like a crash. It does
// nothing if the server is not running.
func (r *Redis) Kill(t testing.TB) {
	t.Helper()
	r.kill()
}

func (r *Redis) kill() {
	if p := r.current(); p != nil {
		p.kill()
	}
}

// Stall stops the server with SIGSTOP: its connections stay open and it
// answers nothing (a replica stalled so stops acknowledging what it is
// sent) until Resume, which runs at the test's end too.
func (r *Redis) Stall(t testing.TB) {
	t.Helper()
	p := r.current()
	if p == nil {
		t.Fatalf("testenv: redis-server %s is not running", r.Addr())
	}
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Resume)
}

// Resume continues a server Stall stopped (SIGCONT).
func (r *Redis) Resume() {
	if p := r.current(); p != nil {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// current returns the running process, or nil.
func (r *Redis) current() *process {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil || r.proc.exited() {
		return nil
	}
	return r.proc
}

// Restart starts the server again on the same port and dir, with the same
// arguments, and waits until it answers. A running server is stopped first
// with SIGTERM. What survives depends on the persistence arguments: by
// default nothing does.
func (r *Redis) Restart(t testing.TB) {
	t.Helper()
	r.Stop(t)
	if err := r.start(); err != nil {
		t.Fatalf("testenv: restart redis-server: %v", err)
	}
}

// CommandCount returns how many commands the server has executed since it
// started, summed from INFO commandstats, not counting INFO itself. Take
// the difference of two calls to assert that some code sent zero commands.
// A go-redis client's new connection sends HELLO and CLIENT SETINFO, which
// count, so warm the client up first; so do the CLUSTER commands that
// StartRedisCluster sends while forming a cluster.
func (r *Redis) CommandCount(t testing.TB) int64 {
	t.Helper()
	var n int64
	for name, calls := range r.CommandStats(t) {
		if name != "info" {
			n += calls
		}
	}
	return n
}

// CommandStats returns the calls per command from INFO commandstats, keyed
// by lower-case command name ("get", "client|setinfo", ...).
func (r *Redis) CommandStats(t testing.TB) map[string]int64 {
	t.Helper()
	info, err := rawCommand(r.Addr(), "INFO", "commandstats")
	if err != nil {
		t.Fatalf("testenv: INFO commandstats on %s: %v", r.Addr(), err)
	}
	stats := make(map[string]int64)
	for _, l := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				calls, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("testenv: bad commandstats line %q", l)
				}
				stats[strings.TrimPrefix(name, "cmdstat_")] = calls
			}
		}
	}
	return stats
}
