package redisrepl

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/testenv"
)

// within is the bound the tests wait with: short, and long enough for a
// healthy replica on a busy machine.
const within = 2 * time.Second

// writeMany writes n keys over rdb's pool, in a pipeline and one by one,
// none on the connection Wait uses.
func writeMany(t *testing.T, rdb redis.UniversalClient, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	pipe := rdb.Pipeline()
	for i := range n {
		pipe.Set(ctx, fmt.Sprintf("%s:%d", prefix, i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := rdb.HSet(ctx, fmt.Sprintf("%s:h{%d}", prefix, i), "f", i).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// dbsize is the number of keys on the server behind c.
func dbsize(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	n, err := c.DBSize(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWaitForAReplica: writes made over pooled connections are on the
// replica when Wait returns. A replica still connected that stopped
// copying (SIGSTOPped) makes Wait a *Shortfall after the bound, not
// before; once it copies again, Wait returns nil with it up to date.
func TestWaitForAReplica(t *testing.T) {
	ctx := context.Background()
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	p, r := primary.Client(t), replica.Client(t)

	writeMany(t, p, "a", 500)
	if err := Wait(ctx, p, within); err != nil {
		t.Fatalf("wait with the replica copying: %v", err)
	}
	if got, want := dbsize(t, r), dbsize(t, p); got != want {
		t.Fatalf("the replica holds %d keys when Wait returned, the primary %d", got, want)
	}

	replica.Stall(t)
	writeMany(t, p, "b", 10)
	start := time.Now()
	err := Wait(ctx, p, within)
	var short *Shortfall
	if !errors.As(err, &short) || short.Acked != 0 || short.Replicas != 1 || short.Master != primary.Addr() {
		t.Fatalf("wait with the replica stalled: %#v, want a Shortfall of 0 of 1 on %s", err, primary.Addr())
	}
	if waited := time.Since(start); waited < within {
		t.Errorf("a shortfall answered after %s, before the bound %s", waited, within)
	}

	replica.Resume()
	if err := Wait(ctx, p, within); err != nil {
		t.Fatalf("wait once the replica copies again: %v", err)
	}
	if got, want := dbsize(t, r), dbsize(t, p); got != want {
		t.Fatalf("the replica holds %d keys once it copies again, the primary %d", got, want)
	}
}

// TestWaitForClusterReplicas: on a Redis Cluster of three masters, two
// with a replica, writes spread over every master are on each replica
// when Wait returns; one replica stalled makes Wait a *Shortfall naming
// its master, while the other master's writes are still confirmed.
func TestWaitForClusterReplicas(t *testing.T) {
	ctx := context.Background()
	cluster := testenv.StartRedisCluster(t, 3)
	cc := cluster.Client(t)
	replicas := map[int]*testenv.Redis{0: cluster.AddReplica(t, 0), 1: cluster.AddReplica(t, 1)}

	writeMany(t, cc, "a", 500)
	if err := Wait(ctx, cc, within); err != nil {
		t.Fatalf("wait with the replicas copying: %v", err)
	}
	for i, r := range replicas {
		if got, want := dbsize(t, r.Client(t)), dbsize(t, cluster.Node(i).Client(t)); got != want || want == 0 {
			t.Fatalf("the replica of master %d holds %d keys when Wait returned, its master %d", i, got, want)
		}
	}

	replicas[1].Stall(t)
	writeMany(t, cc, "b", 100)
	start := time.Now()
	err := Wait(ctx, cc, within)
	var short *Shortfall
	if !errors.As(err, &short) || short.Acked != 0 || short.Replicas != 1 || short.Master != cluster.Node(1).Addr() {
		t.Fatalf("wait with master 1's replica stalled: %#v, want a Shortfall of 0 of 1 on %s", err, cluster.Node(1).Addr())
	}
	if waited := time.Since(start); waited < within {
		t.Errorf("a shortfall answered after %s, before the bound %s", waited, within)
	}
	if got, want := dbsize(t, replicas[0].Client(t)), dbsize(t, cluster.Node(0).Client(t)); got != want {
		t.Errorf("the replica of master 0 holds %d keys, its master %d", got, want)
	}
}

// TestWaitWithoutReplicas: a server without replicas, the embedded
// default (no ROLE) and a Redis Cluster whose masters have none are not
// waited for, and get no marker written.
func TestWaitWithoutReplicas(t *testing.T) {
	ctx := context.Background()
	cluster := testenv.StartRedisCluster(t, 3)
	for name, rdb := range map[string]redis.UniversalClient{
		"redis-server": testenv.StartRedis(t).Client(t),
		"miniredis":    testenv.StartMiniredis(t),
		"cluster":      cluster.Client(t),
	} {
		start := time.Now()
		if err := Wait(ctx, rdb, within); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if took := time.Since(start); took > within/2 {
			t.Errorf("%s: Wait took %s with nothing to wait for", name, took)
		}
	}
	for i := range 3 {
		if n := dbsize(t, cluster.Node(i).Client(t)); n != 0 {
			t.Errorf("cluster master %d holds %d keys, want no marker", i, n)
		}
	}
}

// TestWaitRefusesOtherClients: a client Wait cannot reach every master
// of (a Ring) is an error, never a silent pass.
func TestWaitRefusesOtherClients(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": testenv.StartRedis(t).Addr()}})
	defer ring.Close()
	if err := Wait(context.Background(), ring, within); err == nil {
		t.Fatal("Wait on a Ring: nil, want an error")
	}
}

// TestMarkerSlot: CRC-16/XMODEM matches the Redis Cluster specification's
// check value, and tagFor finds a tag in the slot asked for, over the
// whole range.
func TestMarkerSlot(t *testing.T) {
	if got := crc16("123456789"); got != 0x31c3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for _, slot := range []int{0, 1, 5460, 5461, 10922, 10923, 16383} {
		if got := int(crc16(tagFor(slot))) % clusterSlots; got != slot {
			t.Errorf("tagFor(%d) = %q in slot %d", slot, tagFor(slot), got)
		}
	}
}

// BenchmarkWait measures what Wait adds to a change: on a primary with a
// healthy replica (a marker write and a WAIT), and on a Redis Cluster of
// three masters without replicas (a ROLE on each).
func BenchmarkWait(b *testing.B) {
	ctx := context.Background()
	b.Run("replica", func(b *testing.B) {
		primary := testenv.StartRedis(b)
		testenv.StartRedis(b, testenv.WithReplicaOf(primary.Addr()))
		p := primary.Client(b)
		b.ResetTimer()
		for range b.N {
			if err := p.Set(ctx, "k", "v", 0).Err(); err != nil {
				b.Fatal(err)
			}
			if err := Wait(ctx, p, within); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cluster-without-replicas", func(b *testing.B) {
		cc := testenv.StartRedisCluster(b, 3).Client(b)
		if err := Wait(ctx, cc, within); err != nil { // loads the cluster's slots
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if err := Wait(ctx, cc, within); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestWaitWhenWritesAreRefused: a primary that lost its replicas after a
// change and now refuses writes (min-replicas-to-write) cannot take the
// marker; Wait says the change fell short rather than failing otherwise.
func TestWaitWhenWritesAreRefused(t *testing.T) {
	ctx := context.Background()
	primary := testenv.StartRedis(t, testenv.WithArgs("--min-replicas-to-write", "1", "--min-replicas-max-lag", "1"))
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	p := primary.Client(t)
	writeMany(t, p, "a", 10)
	replica.Stall(t)
	// The primary refuses writes once the replica's last ack is older
	// than the lag bound, while it still lists the replica.
	deadline := time.Now().Add(30 * time.Second)
	for p.Set(ctx, "probe", 1, 0).Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the primary still takes writes 30 s after its replica stalled")
		}
		time.Sleep(100 * time.Millisecond)
	}
	var short *Shortfall
	if err := Wait(ctx, p, within); !errors.As(err, &short) || short.Master != primary.Addr() {
		t.Fatalf("wait on a primary refusing writes: %#v, want a Shortfall on %s", err, primary.Addr())
	}
}
