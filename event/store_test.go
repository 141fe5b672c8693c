package event

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestPutBeforeUsesRedisTime saves under a lock that Redis TIME has not
// reached, then is refused under one it has passed, whatever the caller's
// clock says: the stored configuration is unchanged.
func TestPutBeforeUsesRedisTime(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	s := NewStore(r.Client(t))
	c := valid()
	saved, at, err := s.PutBefore(ctx, c, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	next := saved
	next.Supply = 50
	if saved, _, err = s.PutBefore(ctx, next, at.Add(time.Hour)); err != nil || saved.Supply != 50 {
		t.Fatalf("before the lock: %+v %v", saved.Supply, err)
	}
	next = saved
	next.Supply = 70
	_, refusedAt, err := s.PutBefore(ctx, next, at.Add(-time.Millisecond))
	if !errors.Is(err, ErrLocked) || refusedAt.Before(at) {
		t.Fatalf("past the lock: %v at %v, want ErrLocked at Redis TIME ≥ %v", err, refusedAt, at)
	}
	got, err := s.Get(ctx, c.ID)
	if err != nil || got.Supply != 50 || got.Version != saved.Version {
		t.Fatalf("stored supply %d version %d (%v), want 50 and %d", got.Supply, got.Version, err, saved.Version)
	}
}

// TestPutWaitsForReplicas: a save is acknowledged once the primary's
// replicas copied it. A replica still connected that stopped copying (here
// SIGSTOPped) makes the save ErrNotReplicated, with the saved copy: it
// stands on the primary, and a failover now would lose it. On a Redis
// Cluster the save waits on the master that holds the event.
func TestPutWaitsForReplicas(t *testing.T) {
	ctx := context.Background()
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	s := NewStore(primary.Client(t))
	c := valid()
	saved, err := s.Put(ctx, c)
	if err != nil {
		t.Fatalf("save with a replica copying: %v", err)
	}
	if got, err := NewStore(replica.Client(t)).Get(ctx, c.ID); err != nil || got.Version != saved.Version {
		t.Fatalf("the replica holds version %d (%v) when the save was answered, want %d", got.Version, err, saved.Version)
	}

	replica.Stall(t)
	next := saved
	next.Paused = true
	start := time.Now()
	got, err := s.Put(ctx, next)
	if !errors.Is(err, ErrNotReplicated) || !got.Paused || got.Version != saved.Version+1 {
		t.Fatalf("save with the replica stalled: %+v %v, want the saved copy and ErrNotReplicated", got.Version, err)
	}
	if waited := time.Since(start); waited < ReplicaWait {
		t.Errorf("answered after %s, before ReplicaWait (%s)", waited, ReplicaWait)
	}
	if stored, err := s.Get(ctx, c.ID); err != nil || !stored.Paused {
		t.Fatalf("the primary holds paused=%v (%v), want the save standing", stored.Paused, err)
	}

	replica.Resume()
	again, err := s.Put(ctx, got)
	if err != nil || again.Version != got.Version+1 {
		t.Fatalf("the same change sent again once the replica copies: %+v %v", again.Version, err)
	}
}

// TestPutWaitsForClusterReplicas: on a Redis Cluster whose masters each
// have a replica, a new event writes its configuration to one master and
// the index of events (ar:events) to another; with the index master's
// replica stalled the save is ErrNotReplicated, with the saved copy: a
// failover of that master now would lose the event from the index.
func TestPutWaitsForClusterReplicas(t *testing.T) {
	ctx := context.Background()
	cluster := testenv.StartRedisCluster(t, 3)
	cc := cluster.Client(t)
	var replicas []*testenv.Redis
	for i := range 3 {
		replicas = append(replicas, cluster.AddReplica(t, i))
	}
	masterOf := func(key string) int { return cluster.MasterOf(t, cc, key) }
	s := NewStore(cc)
	if _, err := s.Put(ctx, valid()); err != nil {
		t.Fatalf("save with the replicas copying: %v", err)
	}
	index := masterOf(indexKey)
	c := valid()
	c.ID = "new-0"
	for i := 1; masterOf(configKey(c.ID)) == index; i++ {
		c.ID = fmt.Sprintf("new-%d", i)
	}

	replicas[index].Stall(t)
	start := time.Now()
	got, err := s.Put(ctx, c)
	if !errors.Is(err, ErrNotReplicated) || got.ID != c.ID || got.Version != 1 {
		t.Fatalf("new event %s with the index's replica stalled: %+v %v, want the saved copy and ErrNotReplicated", c.ID, got.Version, err)
	}
	if waited := time.Since(start); waited < ReplicaWait {
		t.Errorf("answered after %s, before ReplicaWait (%s)", waited, ReplicaWait)
	}
	if ids, err := s.IDs(ctx); err != nil || !slices.Contains(ids, c.ID) {
		t.Fatalf("the index holds %v (%v), want %s standing", ids, err, c.ID)
	}
}

// TestPutWithoutReplicas: a server without replicas (or without ROLE, as
// the embedded default) answers a save at once; so does a Redis Cluster
// whose masters have none.
func TestPutWithoutReplicas(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	for name, rdb := range map[string]redis.UniversalClient{
		"redis-server": testenv.StartRedis(t).Client(t),
		"embedded":     redis.NewClient(&redis.Options{Addr: mr.Addr()}),
		"cluster":      testenv.StartRedisCluster(t, 3).Client(t),
	} {
		s := NewStore(rdb)
		c := valid()
		saved, err := s.Put(ctx, c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		saved.Paused = true
		if _, err := s.Put(ctx, saved); err != nil {
			t.Fatalf("%s: second save: %v", name, err)
		}
	}
}
