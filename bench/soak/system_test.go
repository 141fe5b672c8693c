//go:build soak && linux

package soak

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// nodes is how many anteroom nodes the soak runs.
const nodes = 3

// system is everything the soak runs on loopback: a Redis primary with a
// replica, reached by each node through its own proxy; a three-server
// NATS cluster (R3 order stream); three `anteroom serve` processes; and
// `anteroom worker`.
type system struct {
	t    *testing.T
	dp   *deployment
	nats *testenv.NATSCluster
	js   jetstream.JetStream

	mu      sync.Mutex
	primary *testenv.Redis
	replica *testenv.Redis
	rdb     redis.UniversalClient // to the primary, for the sampler and the audit
	// cluster, when set, is the Redis the soak runs on instead of the
	// primary and replica: three masters, no replicas, no proxies (a
	// cluster client follows the nodes' own addresses).
	cluster *testenv.RedisCluster
	proxies [nodes]*proxy
	addrs   [nodes]string
	procs   [nodes]*proc
	worker  *proc
}

func startSystem(t *testing.T, onCluster bool) *system {
	dp, err := newDeployment(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &system{t: t, dp: dp}
	if onCluster {
		s.cluster = testenv.StartRedisCluster(t, 3)
		s.rdb = s.cluster.Client(t)
	} else {
		s.primary = testenv.StartRedis(t)
		s.replica = testenv.StartRedis(t, testenv.WithReplicaOf(s.primary.Addr()))
		s.rdb = s.primary.Client(t)
	}
	s.nats = testenv.StartNATSCluster(t, 3)
	nc, err := nats.Connect(s.nats.URL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if s.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		target := "127.0.0.1:1" // unused on a cluster
		if s.primary != nil {
			target = s.primary.Addr()
		}
		if s.proxies[i], err = newProxy(target); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.proxies[i].close)
		s.addrs[i] = fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
		// The first node generates the shared signing keys: start it alone.
		if err := s.startNode(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.startWorker(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range s.procs {
			p.kill()
		}
		s.worker.kill()
	})
	return s
}

// urls are the nodes' base URLs.
func (s *system) urls() []string {
	out := make([]string, nodes)
	for i, a := range s.addrs {
		out[i] = "http://" + a
	}
	return out
}

func (s *system) startNode(i int, env ...string) error {
	p, err := s.dp.spawn(fmt.Sprintf("node-%d", i), append([]string{
		"ANTEROOM_ADDR=" + s.addrs[i], s.redisSetting("redis://" + s.proxies[i].addr() + "/0"),
		"ANTEROOM_NATS_URL=" + s.nats.URL(), "ANTEROOM_STREAM_REPLICAS=3"}, env...), "serve")
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.procs[i] = p
	s.mu.Unlock()
	return waitReady(p, "http://"+s.addrs[i], 60*time.Second)
}

func (s *system) killNode(i int) {
	s.mu.Lock()
	p := s.procs[i]
	s.mu.Unlock()
	p.kill()
}

func (s *system) startWorker() error {
	// The worker reaches Redis directly (it has no proxy): a failover
	// restarts it on the promoted primary.
	s.mu.Lock()
	var setting string
	if s.primary != nil {
		setting = s.redisSetting(s.primary.URL())
	} else {
		setting = s.redisSetting("")
	}
	s.mu.Unlock()
	w, err := s.dp.spawn("worker", []string{setting, "ANTEROOM_NATS_URL=" + s.nats.URL(), "ANTEROOM_STREAM_REPLICAS=3"}, "worker")
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.worker = w
	s.mu.Unlock()
	return nil
}

func (s *system) stopWorker() {
	s.mu.Lock()
	w := s.worker
	s.mu.Unlock()
	w.kill()
}

// redisSetting is the environment setting that points a process at Redis:
// url, or the cluster's seeds.
func (s *system) redisSetting(url string) string {
	if s.cluster != nil {
		return "ANTEROOM_REDIS_CLUSTER_ADDRS=" + strings.Join(s.cluster.Addrs(), ",")
	}
	return "ANTEROOM_REDIS_URL=" + url
}

// redis returns a client to the current primary (or the cluster).
func (s *system) redis() redis.UniversalClient {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rdb
}

// base returns the URL of a node that answers /readyz, trying i first.
func (s *system) base(i int) string {
	u := s.urls()
	for j := range nodes {
		b := u[(i+j)%nodes]
		if resp, err := adminClient.Get(b + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return b
			}
		}
	}
	return u[i%nodes]
}

// waitSynced waits until the replica has applied everything the primary
// wrote (bounded).
func waitSynced(ctx context.Context, primary, replica *redis.Client, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		p := infoField(ctx, primary, "master_repl_offset")
		r := infoField(ctx, replica, "slave_repl_offset")
		if infoField(ctx, replica, "master_link_status") == "up" && p != "" && p == r {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica not in sync: primary offset %s, replica %s", p, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// infoField reads one field of INFO replication.
func infoField(ctx context.Context, c *redis.Client, field string) string {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && k == field {
			return v
		}
	}
	return ""
}
