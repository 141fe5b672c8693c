package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"

	"github.com/anteroom/anteroom/internal/loopback"
)

// r3 is the shape deploy/ describes (and, with one server, the smallest
// shape an operator runs): a NATS cluster of three servers on
// loopback with the order and lifecycle streams on three replicas, and
// nodes that reach it over TCP, each with a redis-server (or a 3-master
// Redis Cluster) of its own. The NATS servers are `anteroom natsd`
// processes — the nats-server library in anteroom's own binary, as
// deploy/local/run.sh runs them (this machine has no nats-server binary;
// it is the same server code): real processes on loopback ports, each
// with its own store, routed to the others.
type r3 struct {
	nats     []*proc
	natsURLs string
	redis    []*proc // the single redis-servers and the cluster's masters
}

func (x *r3) stop() {
	for _, p := range x.nats {
		p.stop()
	}
	for _, p := range x.redis {
		p.stop()
	}
}

// startR3 starts the NATS cluster under dir.
func startR3(dir, bin string) (*r3, error) { return startNATSServers(dir, bin, 3) }

// startNATSServers starts n `anteroom natsd` servers under dir, routed
// into one cluster when n > 1; the streams get n replicas.
func startNATSServers(dir, bin string, n int) (*r3, error) {
	x := &r3{}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	client, route, mon := make([]int, n), make([]int, n), make([]int, n)
	for i := range n {
		client[i], _ = loopback.FreePort()
		route[i], _ = loopback.FreePort()
		mon[i], _ = loopback.FreePort()
	}
	var routes, urls []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", route[i]))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", client[i]))
	}
	x.natsURLs = strings.Join(urls, ",")
	for i := range n {
		name := fmt.Sprintf("nats-%d", i+1)
		args := []string{"natsd", "-name", name, "-port", fmt.Sprint(client[i]), "-http-port", fmt.Sprint(mon[i]),
			"-store-dir", filepath.Join(dir, name)}
		if n > 1 {
			args = append(args, "-cluster-port", fmt.Sprint(route[i]), "-routes", strings.Join(routes, ","))
		}
		p, err := start(dir, name, bin, nil, args...)
		if err != nil {
			x.stop()
			return nil, err
		}
		x.nats = append(x.nats, p)
	}
	// /healthz answers 200 once JetStream has a meta leader.
	for i := range n {
		url := fmt.Sprintf("http://127.0.0.1:%d/healthz", mon[i])
		if err := poll(60*time.Second, "nats "+url, func() bool { return httpOK(url) }); err != nil {
			x.stop()
			b, _ := os.ReadFile(x.nats[i].log)
			return nil, fmt.Errorf("%w; log: %s", err, tail(string(b), 600))
		}
	}
	return x, nil
}

// redisSingle starts a redis-server of the shape's own.
func (x *r3) redisSingle(dir string) (*proc, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	p, addr, err := startRedis(dir)
	if p != nil {
		x.redis = append(x.redis, p)
	}
	return p, addr, err
}

// redisCluster starts a 3-master Redis Cluster and returns its addresses.
func (x *r3) redisCluster(dir string) ([]*proc, string, error) {
	var addrs []string
	var procs []*proc
	for i := range 3 {
		port, _ := loopback.FreePort()
		d := filepath.Join(dir, fmt.Sprintf("rc-%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, "", err
		}
		p, err := start(d, "redis-cluster", "redis-server", nil, "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", d, "--protected-mode", "no", "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(d, "nodes.conf"))
		if err != nil {
			return nil, "", err
		}
		x.redis = append(x.redis, p)
		procs = append(procs, p)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		c := redis.NewClient(&redis.Options{Addr: addr})
		err = poll(10*time.Second, "redis-server "+addr, func() bool { return c.Ping(context.Background()).Err() == nil })
		c.Close()
		if err != nil {
			return nil, "", err
		}
		addrs = append(addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cp, err := start(dir, "redis-cluster-create", "redis-cli", nil, args...)
	if err != nil {
		return nil, "", err
	}
	if err := cp.cmd.Wait(); err != nil {
		b, _ := os.ReadFile(cp.log)
		return nil, "", fmt.Errorf("redis-cli --cluster create: %v %s", err, tail(string(b), 400))
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer cc.Close()
	err = poll(30*time.Second, "redis cluster", func() bool {
		info, err := cc.ClusterInfo(context.Background()).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
	return procs, strings.Join(addrs, ","), err
}

// node starts an anteroom node on the shape's NATS with redisEnv (its
// Redis setting) and profiling on a loopback port, and returns a stack of
// its own for the measurements, beside s's ceiling.
func (x *r3) node(s *stack, dir, name, bin string, redisProc *proc, redisEnv string) (*stack, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	np, _ := loopback.FreePort()
	pp, _ := loopback.FreePort()
	mp, _ := loopback.FreePort()
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", pp)
	env := append(nodeEnv(dir, np, mp), redisEnv, "ANTEROOM_NATS_URL="+x.natsURLs, fmt.Sprintf("ANTEROOM_STREAM_REPLICAS=%d", len(x.nats)),
		"ANTEROOM_PPROF_ADDR="+pprofAddr)
	p, err := startHTTP(dir, name, bin, np, "/healthz", env, "serve")
	if err != nil {
		return nil, err
	}
	n := *s
	n.dir, n.node, n.redis, n.bin = dir, p, redisProc, bin
	n.nodeURL = fmt.Sprintf("http://127.0.0.1:%d", np)
	n.metricsURL = fmt.Sprintf("http://127.0.0.1:%d", mp)
	n.fast = &fasthttp.HostClient{Addr: fmt.Sprintf("127.0.0.1:%d", np), MaxConns: 4096, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	n.tickets, n.claimTokens, n.claimNext = nil, nil, 0
	n.pprofAddr = pprofAddr
	return &n, nil
}

func httpOK(url string) bool {
	code, _, err := fasthttp.GetTimeout(nil, url, 2*time.Second)
	return err == nil && code == 200
}
