package lists

import (
	"errors"
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
