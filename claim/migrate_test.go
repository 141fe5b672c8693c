package claim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// migrateSlot moves slot from the cluster node src to dst, keys included,
// the way redis-cli --cluster reshard does.
func migrateSlot(ctx context.Context, t *testing.T, c *testenv.RedisCluster, slot int64, src, dst int) {
	t.Helper()
	s, d := c.Node(src).Client(t), c.Node(dst).Client(t)
	sid, err := s.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	did, err := d.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(d.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", sid).Err())
	must(s.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", did).Err())
	host, port, _ := net.SplitHostPort(c.Node(dst).Addr())
	p, _ := strconv.Atoi(port)
	for {
		keys, err := s.ClusterGetKeysInSlot(ctx, int(slot), 100).Result()
		must(err)
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, p, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(s.Do(ctx, args...).Err())
	}
	for i := range 3 {
		must(c.Node(i).Client(t).Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", did).Err())
	}
}

// TestSlotMigrationNeedsRebuild moves a bucket's slot to another master of
// a Redis Cluster mid-sale. The bucket lands on a server with another
// replication id, which the fence cannot tell from a promoted replica or
// a restart that lost data, so it refuses (503 paused, rebuild needed);
// other buckets go on; the documented action, a rebuild, restores it with
// every claim, and the sale runs to the end without an oversell.
func TestSlotMigrationNeedsRebuild(t *testing.T) {
	c := testenv.StartRedisCluster(t, 3)
	ns := testenv.StartNATS(t)
	e := newEnv(t, c.Client(t), ns.URL(), 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := saleConfig(t, e, Sale{ID: "moved", Buckets: 3}, 30)
	first := claimEach(ctx, t, e, cfg, 12)
	cc := e.rdb.(*redis.ClusterClient)
	slot, err := cc.ClusterKeySlot(ctx, bucketOf(cfg.ID, 0).stock()).Result()
	if err != nil {
		t.Fatal(err)
	}
	src := -1
	for i := range 3 {
		if n, err := c.Node(i).Client(t).ClusterCountKeysInSlot(ctx, int(slot)).Result(); err == nil && n > 0 {
			src = i
		}
	}
	if src < 0 {
		t.Fatal("no node holds bucket 0")
	}
	migrateSlot(ctx, t, c, slot, src, (src+1)%3)
	for u, id := range first {
		res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: u, IdemKey: "k", Limit: 1, Buckets: cfg.Buckets})
		if HomeBucket(u, cfg.Buckets) == 0 {
			if !errors.Is(err, ErrNeedsRebuild) {
				t.Errorf("replay of %s in the moved bucket: %+v %v, want ErrNeedsRebuild", u, res, err)
			}
			if _, err := e.svc.Release(ctx, cfg.ID, id, u); !errors.Is(err, ErrNeedsRebuild) {
				t.Errorf("release of %s in the moved bucket: %v, want ErrNeedsRebuild", u, err)
			}
		} else if err != nil || res.ClaimID != id {
			t.Errorf("replay of %s in a bucket that stayed: %+v %v, want %s", u, res, err, id)
		}
	}
	rep, err := NewRebuilder(e.svc, e.js, event.NewStore(e.rdb)).Rebuild(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Granted != len(first) {
		t.Errorf("rebuild %+v, want %d granted", rep, len(first))
	}
	for u, id := range first {
		if res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: u, IdemKey: "k", Limit: 1, Buckets: cfg.Buckets}); err != nil || res.ClaimID != id {
			t.Errorf("replay of %s after the rebuild: %+v %v, want %s", u, res, err, id)
		}
	}
	for i := 0; ; i++ {
		if _, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: fmt.Sprint("r", i), IdemKey: "k", Limit: 1, Buckets: cfg.Buckets}); errors.Is(err, ErrSoldOut) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	e.svc.flush(ctx, func(err error) { t.Fatal(err) })
	if granted, released := e.streamCheck(t, cfg.ID); int64(len(granted)-len(released)) != cfg.OnSale() {
		t.Errorf("%d granted − %d released on the stream, want %d", len(granted), len(released), cfg.OnSale())
	}
	e.totals(t, SaleOf(cfg), cfg.OnSale())
}

// claimEach has users u0 … u(n-1) claim one unit each of cfg's sale with
// idempotency key "k", publishes the outbox and returns each user's claim.
func claimEach(ctx context.Context, t *testing.T, e *env, cfg event.Config, n int) map[string]string {
	t.Helper()
	first := map[string]string{}
	for i := range n {
		u := fmt.Sprint("u", i)
		res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: u, IdemKey: "k", Limit: 1, Buckets: cfg.Buckets})
		if err != nil {
			t.Fatal(err)
		}
		first[u] = res.ClaimID
	}
	e.svc.flush(ctx, func(err error) { t.Fatal(err) })
	return first
}
