package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/anteroom/anteroom/internal/loopback"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/redis/go-redis/v9"
)

// millionStack is what `loadgen -scenario million -spawn` (and -scenario
// flash) runs the crowd against, each its own process on loopback: one
// redis-server (or a Redis Cluster of masters), one `anteroom natsd`, and
// two `anteroom serve` nodes sharing the ticket secret, the signing keys
// and the admin token, in header identity mode trusting 127.0.0.1 (the
// generator plays the shop's gateway).
type millionStack struct {
	dir          string
	procs        []*exec.Cmd
	redisURL     string
	clusterAddrs []string // with masters > 1, instead of redisURL
	natsURL      string
	urls         []string
	metricsURLs  []string // each node's metrics listener, in the order of urls
	admin        string
	nodePIDs     []int
	redisPIDs    []int
	pprofAddrs   []string // each node's profiles (ANTEROOM_PPROF_ADDR, loopback), in the order of urls
	bin          string   // the nodes' binary (this one)
}

// startMillionStack starts the stack with nodes nodes; masters > 1 makes
// its Redis a cluster of that many masters (no replicas), formed with
// `redis-cli --cluster create`.
func startMillionStack(ctx context.Context, nodes, masters int) (*millionStack, error) {
	dir, err := os.MkdirTemp("", "anteroom-million-")
	if err != nil {
		return nil, err
	}
	s := &millionStack{dir: dir, admin: "million-" + randomHex(16)}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	masters = max(masters, 1)
	s.bin = self
	ports := make([]int, 2+nodes+2*masters+2*nodes) // then metrics listeners, then profiles
	for i := range ports {
		if ports[i], err = loopback.FreePort(); err != nil {
			return s, err
		}
	}
	redisPorts := append([]int{ports[0]}, ports[2+nodes:2+nodes+masters-1]...)
	for i, p := range redisPorts {
		args := []string{"--port", strconv.Itoa(p), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no"}
		if masters > 1 {
			args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", fmt.Sprintf("nodes-%d.conf", i),
				"--cluster-port", strconv.Itoa(ports[2+nodes+masters+i]), "--cluster-node-timeout", "5000")
			s.clusterAddrs = append(s.clusterAddrs, fmt.Sprintf("127.0.0.1:%d", p))
		}
		redis, err := s.spawn(fmt.Sprintf("redis-%d", i), "redis-server", nil, args...)
		if err != nil {
			return s, err
		}
		s.redisPIDs = append(s.redisPIDs, redis.Process.Pid)
	}
	s.redisURL = fmt.Sprintf("redis://127.0.0.1:%d", ports[0])
	s.natsURL = fmt.Sprintf("nats://127.0.0.1:%d", ports[1])
	if _, err := s.spawn("natsd", self, nil, "natsd", "-port", strconv.Itoa(ports[1]), "-store-dir", filepath.Join(dir, "nats")); err != nil {
		return s, err
	}
	for _, p := range append(redisPorts, ports[1]) {
		if err := waitUntil(ctx, 30*time.Second, func() bool { return dialable(p) }); err != nil {
			return s, fmt.Errorf("port %d: %w; logs in %s", p, err, dir)
		}
	}
	redisEnv := "ANTEROOM_REDIS_URL=" + s.redisURL
	if masters > 1 {
		if err := formCluster(ctx, s.clusterAddrs); err != nil {
			return s, err
		}
		s.redisURL = ""
		redisEnv = "ANTEROOM_REDIS_CLUSTER_ADDRS=" + strings.Join(s.clusterAddrs, ",")
	}
	env := []string{
		redisEnv, "ANTEROOM_NATS_URL=" + s.natsURL,
		"ANTEROOM_ADMIN_TOKEN=" + s.admin, "ANTEROOM_TICKET_SECRET=" + randomHex(32),
		"ANTEROOM_SIGNING_KEYS=" + filepath.Join(dir, "keys"), "ANTEROOM_IDENTITY=header",
		"ANTEROOM_TRUSTED_PROXIES=127.0.0.1", "ANTEROOM_LOG_FORMAT=text", "ANTEROOM_DRAIN_DELAY=0s",
	}
	// One node at a time: the first creates the signing keys the others read.
	for i, p := range ports[2 : 2+nodes] {
		name := fmt.Sprintf("node-%c", 'a'+i)
		mp, pp := ports[2+nodes+2*masters+i], ports[2+2*nodes+2*masters+i]
		pprofAddr := fmt.Sprintf("127.0.0.1:%d", pp)
		cmd, err := s.spawn(name, self, append(env, fmt.Sprintf("ANTEROOM_ADDR=127.0.0.1:%d", p),
			fmt.Sprintf("ANTEROOM_METRICS_ADDR=127.0.0.1:%d", mp), "ANTEROOM_PPROF_ADDR="+pprofAddr, "ANTEROOM_DATA_DIR="+filepath.Join(dir, name)), "serve")
		if err != nil {
			return s, err
		}
		u := fmt.Sprintf("http://127.0.0.1:%d", p)
		if err := waitUntil(ctx, 60*time.Second, func() bool { return httpOK(u + "/readyz") }); err != nil {
			return s, fmt.Errorf("%s: %w; log %s", name, err, filepath.Join(dir, name+".log"))
		}
		s.urls = append(s.urls, u)
		s.metricsURLs = append(s.metricsURLs, fmt.Sprintf("http://127.0.0.1:%d", mp))
		s.nodePIDs = append(s.nodePIDs, cmd.Process.Pid)
		s.pprofAddrs = append(s.pprofAddrs, pprofAddr)
	}
	return s, nil
}

// formCluster joins the masters at addrs into one Redis Cluster with
// `redis-cli --cluster create` and waits until every one of them reports
// cluster_state:ok.
func formCluster(ctx context.Context, addrs []string) error {
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-yes", "--cluster-replicas", "0")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, a := range addrs {
		err := waitUntil(ctx, 30*time.Second, func() bool {
			c := redis.NewClient(&redis.Options{Addr: a})
			defer c.Close()
			info, err := c.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		})
		if err != nil {
			return fmt.Errorf("redis cluster node %s: %w", a, err)
		}
	}
	return nil
}

func (s *millionStack) spawn(name, bin string, env []string, args ...string) (*exec.Cmd, error) {
	f, err := os.Create(filepath.Join(s.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s.procs = append(s.procs, cmd)
	return cmd, nil
}

// stop ends every process it started (nodes first), each by its own
// process group, and removes the directory.
func (s *millionStack) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	os.RemoveAll(s.dir)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func dialable(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

func httpOK(u string) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitUntil polls ok every 50 ms until it holds, d passes or ctx ends.
func waitUntil(ctx context.Context, d time.Duration, ok func() bool) error {
	return wait.Until(d, 50*time.Millisecond, func() error {
		if ok() {
			return nil
		}
		if ctx.Err() != nil {
			return wait.Stop(fmt.Errorf("not ready after %s", d))
		}
		return fmt.Errorf("not ready after %s", d)
	})
}
