//go:build soak && linux

package soak

import (
	"fmt"
	"net/http"
	"path/filepath"
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
	dp   *testenv.Deployment
	nats *testenv.NATSCluster
	js   jetstream.JetStream

	mu      sync.Mutex
	primary *testenv.Redis
	replica *testenv.Redis
	// replLink is the replica's link to the primary: a lagging failover
	// stalls it (the replica stays connected and copies nothing more).
	replLink *proxy
	rdb      redis.UniversalClient // to the primary, for the sampler and the audit
	// cluster, when set, is the Redis the soak runs on instead of the
	// primary and replica: three masters, no replicas, no proxies (a
	// cluster client follows the nodes' own addresses).
	cluster *testenv.RedisCluster
	proxies [nodes]*proxy
	addrs   [nodes]string
	procs   [nodes]*testenv.Proc
	worker  *testenv.Proc
	// push are the nodes' Web Push settings, pushKey its VAPID public key
	// (push_test.go).
	push    []string
	pushKey string
}

// adminClient is the soak's own HTTP client for reads it makes beside
// the crowd: bounded, so a stuck node cannot hold a sampler.
var adminClient = &http.Client{Timeout: 30 * time.Second}

// newDeployment returns the settings the soak's processes share, running
// bin, or when bin is empty the anteroom binary built into dir.
func newDeployment(dir, bin string) (*testenv.Deployment, error) {
	if bin == "" {
		bin = filepath.Join(dir, "anteroom")
		if err := testenv.BuildAnteroom(bin); err != nil {
			return nil, err
		}
	}
	return testenv.NewDeployment(dir, bin)
}

// startReplica starts a replica of the primary at addr, linked to it
// through a proxy (closed when the test ends).
func startReplica(t *testing.T, addr string) (*testenv.Redis, *proxy, error) {
	link, err := newProxy(addr)
	if err != nil {
		return nil, nil, err
	}
	t.Cleanup(link.close)
	return testenv.StartRedis(t, testenv.WithReplicaOf(link.addr())), link, nil
}

// startSystem starts the soak's processes, running bin (empty: this
// tree's anteroom, built).
func startSystem(t *testing.T, onCluster bool, bin string) *system {
	dp, err := newDeployment(t.TempDir(), bin)
	if err != nil {
		t.Fatal(err)
	}
	s := &system{t: t, dp: dp}
	if s.push, s.pushKey, err = pushSettings(dp.Dir); err != nil {
		t.Fatal(err)
	}
	if onCluster {
		s.cluster = testenv.StartRedisCluster(t, 3)
		s.rdb = s.cluster.Client(t)
	} else {
		s.primary = testenv.StartRedis(t)
		if s.replica, s.replLink, err = startReplica(t, s.primary.Addr()); err != nil {
			t.Fatal(err)
		}
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
			p.Kill()
		}
		s.worker.Kill()
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
	p, err := s.dp.Spawn(fmt.Sprintf("node-%d", i), append([]string{
		"ANTEROOM_ADDR=" + s.addrs[i], s.redisSetting("redis://" + s.proxies[i].addr() + "/0"),
		"ANTEROOM_NATS_URL=" + s.nats.URL(), "ANTEROOM_STREAM_REPLICAS=3"}, append(s.push, env...)...), "serve")
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.procs[i] = p
	s.mu.Unlock()
	return p.WaitReady("http://"+s.addrs[i], 60*time.Second)
}

func (s *system) killNode(i int) {
	s.mu.Lock()
	p := s.procs[i]
	s.mu.Unlock()
	p.Kill()
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
	w, err := s.dp.Spawn("worker", []string{setting, "ANTEROOM_NATS_URL=" + s.nats.URL(), "ANTEROOM_STREAM_REPLICAS=3"}, "worker")
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
	w.Kill()
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
