package testenv

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/anteroom/anteroom/internal/loopback"
)

// natsClusterName is the cluster name every test cluster uses.
const natsClusterName = "anteroom-test"

// natsClusterTimeout bounds the wait for a JetStream meta leader that knows
// every peer. Elections take a few seconds at the server's default raft
// timeouts, more under -race on a busy machine.
const natsClusterTimeout = 30 * time.Second

// NATSCluster is a cluster of in-process nats-servers with JetStream, fully
// routed to each other on 127.0.0.1, shut down when the test ends. Its
// methods are safe for concurrent use, but Stop and Restart of the same
// node must not race each other.
type NATSCluster struct {
	nodes []*NATS
}

// StartNATSCluster starts n servers named anteroom-test-0 … anteroom-test-<n-1>
// in cluster "anteroom-test", each with its own client port, cluster port,
// store dir and routes to all the others. It returns once every server
// accepts connections, a JetStream meta leader exists, the leader sees all n
// peers and every server is current, so that creating an R3 stream succeeds
// right away.
func StartNATSCluster(t testing.TB, n int) *NATSCluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("testenv: a NATS cluster needs at least one server, got %d", n)
	}
	// Cluster ports must be known up front for the routes, so they come
	// from FreePort and may be taken meanwhile; then try again.
	const attempts = 3
	var err error
	for i := 0; i < attempts; i++ {
		var c *NATSCluster
		c, err = startNATSCluster(t, n)
		if err == nil {
			t.Cleanup(c.shutdown)
			return c
		}
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	t.Fatalf("testenv: start NATS cluster of %d: %v", n, err)
	return nil
}

func startNATSCluster(t testing.TB, n int) (*NATSCluster, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := loopback.FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	c := &NATSCluster{}
	for i := 0; i < n; i++ {
		var others []string
		for j, p := range ports {
			if j != i {
				others = append(others, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
			}
		}
		c.nodes = append(c.nodes, &NATS{cfg: natsConfig{
			name:        fmt.Sprintf("%s-%d", natsClusterName, i),
			port:        -1,
			storeDir:    t.TempDir(),
			clusterName: natsClusterName,
			clusterPort: ports[i],
			routes:      server.RoutesFromStr(strings.Join(others, ",")),
		}})
	}
	for _, node := range c.nodes {
		if err := node.start(); err != nil {
			c.shutdown()
			return nil, err
		}
	}
	if err := c.waitReady(); err != nil {
		c.shutdown()
		return nil, err
	}
	return c, nil
}

// waitReady polls until a meta leader exists among the running servers, it
// counts every running server as a JetStream peer, and every running server
// is current with the meta group.
func (c *NATSCluster) waitReady() error {
	err := poll(natsClusterTimeout, func() error {
		var running []*server.Server
		for _, node := range c.nodes {
			if s := node.Server(); s != nil && s.Running() {
				running = append(running, s)
			}
		}
		var leader *server.Server
		for _, s := range running {
			if s.JetStreamIsLeader() {
				leader = s
			}
		}
		if leader == nil {
			return errors.New("no JetStream meta leader yet")
		}
		if peers := leader.JetStreamClusterPeers(); len(peers) != len(running) {
			return fmt.Errorf("meta leader %s sees peers %v, want %d", leader.Name(), peers, len(running))
		}
		for _, s := range running {
			if !s.JetStreamIsCurrent() {
				return fmt.Errorf("%s is not current with the meta leader", s.Name())
			}
		}
		return nil
	})
	if err != nil {
		var logs strings.Builder
		for _, node := range c.nodes {
			node.mu.Lock()
			if node.log != nil {
				fmt.Fprintf(&logs, "\n%s:%s", node.cfg.name, node.log.tail())
			}
			node.mu.Unlock()
		}
		return fmt.Errorf("cluster not ready within %v: %v%s", natsClusterTimeout, err, logs.String())
	}
	return nil
}

func (c *NATSCluster) shutdown() {
	for _, node := range c.nodes {
		node.Shutdown()
	}
}

// URLs returns every server's client URL, "nats://127.0.0.1:port".
func (c *NATSCluster) URLs() []string {
	urls := make([]string, len(c.nodes))
	for i, node := range c.nodes {
		urls[i] = node.URL()
	}
	return urls
}

// URL returns the client URLs comma-joined, as nats.Connect accepts.
func (c *NATSCluster) URL() string { return strings.Join(c.URLs(), ",") }

// Server returns server i (0-based); a new one after Restart(t, i).
func (c *NATSCluster) Server(i int) *server.Server { return c.nodes[i].Server() }

// Node returns server i's handle. Its Restart does not wait for the
// cluster; Restart(t, i) does.
func (c *NATSCluster) Node(i int) *NATS { return c.nodes[i] }

// Stop shuts server i down and waits until it has finished. The others keep
// quorum while a majority runs; streams led by server i elect a new leader,
// so clients should retry briefly.
func (c *NATSCluster) Stop(i int) { c.nodes[i].Shutdown() }

// Restart starts server i again with the same name, ports and store dir,
// and waits until the cluster is ready again (meta leader, all peers
// current).
func (c *NATSCluster) Restart(t testing.TB, i int) {
	t.Helper()
	c.nodes[i].Restart(t)
	if err := c.waitReady(); err != nil {
		t.Fatalf("testenv: NATS cluster after restarting %d: %v", i, err)
	}
}

// MetaLeader returns the server that is JetStream meta leader now, or nil
// during an election.
func (c *NATSCluster) MetaLeader() *server.Server {
	for _, node := range c.nodes {
		if s := node.Server(); s != nil && s.Running() && s.JetStreamIsLeader() {
			return s
		}
	}
	return nil
}
