package testenv

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// AddReplica starts a cluster-enabled redis-server, introduces it to the
// cluster and makes it a replica of master i (CLUSTER REPLICATE), and
// returns it once it has synced, master i lists it online (as
// StartRedis's WithReplicaOf waits) and it sees the cluster ok. Stall it to make the master's WAIT
// fall short. It is killed when the test ends.
func (c *RedisCluster) AddReplica(t testing.TB, i int) *Redis {
	t.Helper()
	master := c.nodes[i]
	id, err := rawCommand(master.Addr(), "CLUSTER", "MYID")
	if err != nil {
		t.Fatalf("testenv: CLUSTER MYID of %s: %v", master.Addr(), err)
	}
	r := StartRedis(t, withCluster())
	if _, err := rawCommand(r.Addr(), "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(master.port), master.busPort()); err != nil {
		t.Fatalf("testenv: CLUSTER MEET from %s: %v", r.Addr(), err)
	}
	// REPLICATE names a node the new one must have learnt of first.
	err = poll(readyTimeout, func() error {
		_, err := rawCommand(r.Addr(), "CLUSTER", "REPLICATE", id)
		if err != nil && !strings.Contains(err.Error(), "Unknown node") {
			return fmt.Errorf("%w: %v", errStop, err)
		}
		return err
	})
	if err != nil {
		t.Fatalf("testenv: CLUSTER REPLICATE %s on %s: %v", id, r.Addr(), err)
	}
	if err := r.waitLinked(t, master.Addr()); err != nil {
		t.Fatalf("testenv: %v", err)
	}
	// A replica answers CLUSTERDOWN to a READONLY read until gossip has
	// told it every node and slot.
	err = poll(readyTimeout, func() error {
		info, err := rawCommand(r.Addr(), "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		state, known := infoField(info, "cluster_state"), infoField(info, "cluster_known_nodes")
		if n, _ := strconv.Atoi(known); state != "ok" || n < len(c.nodes)+1 {
			return fmt.Errorf("cluster_state:%s cluster_known_nodes:%s", state, known)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("testenv: Redis Cluster replica %s not ready within %v: %v", r.Addr(), readyTimeout, err)
	}
	return r
}
