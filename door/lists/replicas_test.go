package lists

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// TestChangesWaitForReplicas: a list change is answered once the Redis
// primary's replicas hold all of it — the list, a sale's exact copy and
// the Meta nodes poll. A replica still connected that stopped copying
// (SIGSTOPped) makes an add, a remove and a load answer an error
// wrapping event.ErrNotReplicated after event.ReplicaWait, with the
// change applied on the primary; sent again once the replica copies, the
// same change (a no-op by then) is answered without error, and the
// replica holds it.
func TestChangesWaitForReplicas(t *testing.T) {
	ctx := ctxOf(t)
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	prdb, rrdb := primary.Client(t), replica.Client(t)
	s, onReplica := NewStore(prdb), NewStore(rrdb)
	copyKey := CopyKey(queue.LaneTag("gala", 0), "vip")

	if _, err := s.Create(ctx, "vip", KindUser); err != nil {
		t.Fatalf("create with a replica copying: %v", err)
	}
	if _, err := onReplica.Get(ctx, "vip"); err != nil {
		t.Fatalf("the replica has no list vip when its create was answered: %v", err)
	}
	if err := s.Sync(ctx, sale("gala", 1, false, []string{"vip"}, nil)); err != nil {
		t.Fatalf("sync with a replica copying: %v", err)
	}
	m, err := s.Add(ctx, "vip", "u1")
	if err != nil {
		t.Fatalf("add with a replica copying: %v", err)
	}
	if got, err := onReplica.Get(ctx, "vip"); err != nil || got.Version != m.Version || got.Count != 1 {
		t.Fatalf("the replica holds %+v (%v) when the add was answered, want version %d, 1 entry", got, err, m.Version)
	}
	if !listHas(t, rrdb, s, copyKey, "u1") {
		t.Fatal("the replica's copy of gala lacks u1 when the add was answered")
	}
	res, err := s.Load(ctx, "vip", csvOf([]string{"u2", "u3"}), LoadOptions{})
	if err != nil {
		t.Fatalf("load with a replica copying: %v", err)
	}
	if got, err := onReplica.Get(ctx, "vip"); err != nil || got.Version != res.Meta.Version || got.Count != 3 {
		t.Fatalf("the replica holds %+v (%v) when the load was answered, want version %d, 3 entries", got, err, res.Meta.Version)
	}

	replica.Stall(t)
	stalled := func(what string, err error, start time.Time) {
		t.Helper()
		if !errors.Is(err, event.ErrNotReplicated) {
			t.Fatalf("%s with the replica stalled: %v, want event.ErrNotReplicated", what, err)
		}
		if waited := time.Since(start); waited < event.ReplicaWait {
			t.Errorf("%s answered after %s, before ReplicaWait (%s)", what, waited, event.ReplicaWait)
		}
	}
	start := time.Now()
	m, err = s.Add(ctx, "vip", "u4")
	stalled("add", err, start)
	if m.Count != 4 || m.Version <= res.Meta.Version {
		t.Errorf("add with the replica stalled answered %+v, want the list as saved (4 entries, a new version)", m)
	}
	start = time.Now()
	res, err = s.Load(ctx, "vip", csvOf([]string{"u5"}), LoadOptions{})
	stalled("append", err, start)
	if res.Meta.Count != 5 || res.Added != 1 {
		t.Errorf("append with the replica stalled answered %+v, want the list as saved (5 entries)", res)
	}
	start = time.Now()
	m, err = s.Remove(ctx, "vip", "u1")
	stalled("remove", err, start)
	if got, err := s.Get(ctx, "vip"); err != nil || got.Count != 4 || got.Version != m.Version {
		t.Fatalf("the primary holds %+v (%v), want the changes standing (4 entries, version %d)", got, err, m.Version)
	}
	for v, want := range map[string]bool{"u1": false, "u4": true, "u5": true} {
		if got := listHas(t, prdb, s, copyKey, v); got != want {
			t.Errorf("the primary's copy of gala holds %s: %v, want %v", v, got, want)
		}
	}

	replica.Resume()
	again, err := s.Remove(ctx, "vip", "u1")
	if err != nil || again.Version != m.Version {
		t.Fatalf("the same remove sent again once the replica copies: %+v %v, want no error and version %d", again, err, m.Version)
	}
	if got, err := onReplica.Get(ctx, "vip"); err != nil || got.Version != m.Version || got.Count != 4 {
		t.Fatalf("the replica holds %+v (%v) once the remove was sent again, want version %d, 4 entries", got, err, m.Version)
	}
	if listHas(t, rrdb, s, copyKey, "u1") || !listHas(t, rrdb, s, copyKey, "u5") {
		t.Error("the replica's copy of gala differs from the primary's once the remove was sent again")
	}
}

// TestChangesWithoutReplicas: a server without replicas, the embedded
// default (no ROLE) and a Redis Cluster whose masters have none answer
// every change at once, without an error.
func TestChangesWithoutReplicas(t *testing.T) {
	for name, rdb := range map[string]redis.UniversalClient{
		"redis-server": testenv.StartRedis(t).Client(t),
		"miniredis":    testenv.StartMiniredis(t),
		"cluster":      testenv.StartRedisCluster(t, 3).Client(t),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, s := ctxOf(t), NewStore(rdb)
			start := time.Now()
			if _, err := s.Create(ctx, "vip", KindUser); err != nil {
				t.Fatalf("create: %v", err)
			}
			if err := s.Sync(ctx, sale("gala", 4, true, []string{"vip"}, nil)); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if _, err := s.Load(ctx, "vip", strings.NewReader("a\nb\n"), LoadOptions{Replace: true}); err != nil {
				t.Fatalf("load: %v", err)
			}
			if _, err := s.Add(ctx, "vip", "c"); err != nil {
				t.Fatalf("add: %v", err)
			}
			if _, err := s.Remove(ctx, "vip", "a"); err != nil {
				t.Fatalf("remove: %v", err)
			}
			if err := s.Forget(ctx, "gala"); err != nil {
				t.Fatalf("forget: %v", err)
			}
			if err := s.Delete(ctx, "vip"); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if took := time.Since(start); took >= event.ReplicaWait {
				t.Errorf("seven changes took %s without replicas to wait for, want well under ReplicaWait (%s) each", took, event.ReplicaWait)
			}
		})
	}
}

// TestChangesWaitForClusterReplicas: on a Redis Cluster of three masters,
// each with a replica, a change writes the list, a sale's copy and the
// Meta to several masters; when it is answered, the replica of each holds
// what its master does. The replica of the master holding the list's
// entries stalled makes an add ErrNotReplicated after ReplicaWait, the
// add standing; sent again once it copies, it is confirmed.
func TestChangesWaitForClusterReplicas(t *testing.T) {
	ctx := ctxOf(t)
	cluster := testenv.StartRedisCluster(t, 3)
	cc := cluster.Client(t)
	var replicas []*testenv.Redis
	for i := range 3 {
		replicas = append(replicas, cluster.AddReplica(t, i))
	}
	masterOf := func(key string) int { return cluster.MasterOf(t, cc, key) }
	copyKey := CopyKey(queue.LaneTag("gala", 0), "vip")
	keys := []string{listKey("vip"), copyKey, metaKey, copiedKey}
	// same fails unless each key's replica holds what its master holds.
	same := func(when string) {
		t.Helper()
		for _, k := range keys {
			i := masterOf(k)
			want, err := cluster.Node(i).Client(t).HGetAll(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			rc := redis.NewClient(&redis.Options{Addr: replicas[i].Addr(),
				OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
			got, err := rc.HGetAll(ctx, k).Result()
			_ = rc.Close()
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want) || len(want) == 0 {
				t.Fatalf("%s: the replica of master %d holds %s as %d fields (%v), its master as %d", when, i, k, len(got), err, len(want))
			}
		}
	}

	s := NewStore(cc)
	if _, err := s.Create(ctx, "vip", KindUser); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := s.Sync(ctx, sale("gala", 1, false, []string{"vip"}, nil)); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if _, err := s.Add(ctx, "vip", "u1"); err != nil {
		t.Fatalf("add with the replicas copying: %v", err)
	}
	same("once the add was answered")

	replicas[masterOf(listKey("vip"))].Stall(t)
	start := time.Now()
	m, err := s.Add(ctx, "vip", "u2")
	if !errors.Is(err, event.ErrNotReplicated) {
		t.Fatalf("add with the entries' replica stalled: %v, want event.ErrNotReplicated", err)
	}
	if waited := time.Since(start); waited < event.ReplicaWait {
		t.Errorf("answered after %s, before ReplicaWait (%s)", waited, event.ReplicaWait)
	}
	if got, err := s.Get(ctx, "vip"); err != nil || got.Count != 2 || got.Version != m.Version || !listHas(t, cc, s, copyKey, "u2") {
		t.Fatalf("the masters hold %+v (%v), want the add standing (2 entries, version %d, u2 in the copy)", got, err, m.Version)
	}

	replicas[masterOf(listKey("vip"))].Resume()
	if again, err := s.Add(ctx, "vip", "u2"); err != nil || again.Version != m.Version {
		t.Fatalf("the same add sent again once the replica copies: %+v %v", again, err)
	}
	same("once the add was sent again")
}
