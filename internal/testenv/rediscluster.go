package testenv

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a Redis Cluster of masters only (no replicas), each a
// redis-server on 127.0.0.1 with its own port, cluster bus port and data dir,
// killed when the test ends.
type RedisCluster struct {
	nodes []*Redis
}

// StartRedisCluster starts masters cluster-enabled redis-servers, joins them
// with `redis-cli --cluster create` (or, for fewer than the three masters
// redis-cli insists on, with CLUSTER ADDSLOTSRANGE and CLUSTER MEET), and
// polls CLUSTER INFO on every node until cluster_state is ok, all 16384
// slots are assigned and every node knows every other.
//
// The nodes use --cluster-node-timeout 5000: a killed node is marked failed
// (and, since every slot is required, the cluster goes down) about five
// seconds after it dies.
func StartRedisCluster(t testing.TB, masters int) *RedisCluster {
	t.Helper()
	if masters < 1 {
		t.Fatalf("testenv: a Redis Cluster needs at least one master, got %d", masters)
	}
	cli := ""
	if masters >= 3 {
		cli = Binary(t, "redis-cli")
	}
	c := &RedisCluster{}
	for i := 0; i < masters; i++ {
		c.nodes = append(c.nodes, StartRedis(t, withCluster()))
	}

	if cli != "" {
		args := append([]string{"--cluster", "create"}, c.Addrs()...)
		args = append(args, "--cluster-yes", "--cluster-replicas", "0")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("testenv: redis-cli --cluster create: %v\n%s", err, out)
		}
	} else if err := c.joinByHand(); err != nil {
		t.Fatalf("testenv: form Redis Cluster: %v", err)
	}

	for _, n := range c.nodes {
		addr := n.Addr()
		err := poll(readyTimeout, func() error {
			info, err := rawCommand(addr, "CLUSTER", "INFO")
			if err != nil {
				return err
			}
			state := infoField(info, "cluster_state")
			slots := infoField(info, "cluster_slots_assigned")
			known := infoField(info, "cluster_known_nodes")
			if state != "ok" || slots != "16384" || known != strconv.Itoa(masters) {
				return fmt.Errorf("cluster_state:%s cluster_slots_assigned:%s cluster_known_nodes:%s", state, slots, known)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("testenv: Redis Cluster node %s not ready within %v: %v", addr, readyTimeout, err)
		}
	}
	return c
}

// joinByHand gives each node an equal share of the slots and introduces
// every node to the first one.
func (c *RedisCluster) joinByHand() error {
	n := len(c.nodes)
	for i, node := range c.nodes {
		lo, hi := i*16384/n, (i+1)*16384/n-1
		if _, err := rawCommand(node.Addr(), "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE %d %d: %v", node.Addr(), lo, hi, err)
		}
	}
	first := c.nodes[0]
	for _, node := range c.nodes[1:] {
		bus := node.busPort()
		if _, err := rawCommand(first.Addr(), "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(node.port), bus); err != nil {
			return fmt.Errorf("%s: CLUSTER MEET %s: %v", first.Addr(), node.Addr(), err)
		}
	}
	return nil
}

// busPort returns the --cluster-port argument.
func (r *Redis) busPort() string {
	for i, a := range r.args {
		if a == "--cluster-port" && i+1 < len(r.args) {
			return r.args[i+1]
		}
	}
	return ""
}

// Addrs returns the nodes' addresses, "127.0.0.1:port", in node order.
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Client returns a new go-redis cluster client seeded with every node,
// closed when the test ends.
func (c *RedisCluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// MasterOf returns the index (as Node takes it) of the master that serves
// key, as cc's slot map says.
func (c *RedisCluster) MasterOf(t testing.TB, cc *redis.ClusterClient, key string) int {
	t.Helper()
	m, err := cc.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range c.nodes {
		if n.Addr() == m.Options().Addr {
			return i
		}
	}
	t.Fatalf("testenv: no node of the cluster serves %s (%s)", key, m.Options().Addr)
	return -1
}

// Node returns node i (0-based), for example to Kill and Restart it. A
// restarted node reads its nodes.conf and rejoins the cluster.
func (c *RedisCluster) Node(i int) *Redis { return c.nodes[i] }
