package testenv

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// AddReplica starts a cluster-enabled redis-server, introduces it to the
// cluster and makes it a replica of master i (CLUSTER REPLICATE), and
// returns it once it has synced and master i lists it online (as
// StartRedis's WithReplicaOf waits). Stall it to make the master's WAIT
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
	return r
}
