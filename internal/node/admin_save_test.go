package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
)

// TestRefusedSaveChangesNothing: pass holders claim before the start; then
// staff change the supply. Whatever the admin API answers, the stored
// configuration and the stock agree (units on sale − units granted), and a
// refused save (409) leaves the configuration, its version and the audit
// trail as they were.
func TestRefusedSaveChangesNothing(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "early", openSale(5, 1, 30*time.Minute, 0, 1)) // the queue admits nobody
	op := map[string]string{"Authorization": "Bearer " + staffKey(t, n, "olga", "operator")}
	a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/early/passes", op, []byte(`{"uses":3,"ttl_seconds":600}`))
	if a.Status != http.StatusCreated {
		t.Fatalf("mint: %d %s", a.Status, a.Raw)
	}
	pass := nodetest.Str(a.Body, "pass")
	for i := range 3 {
		user := fmt.Sprint("holder", i)
		j := join(t, n, "early", map[string]string{"X-User-ID": user, tokens.PassHeader: pass})
		tok := nodetest.Str(j.Body, "admission_token")
		c := nodetest.Call(t, http.MethodPost, n.URL()+"/events/early/claim", map[string]string{"X-User-ID": user,
			"Authorization": "Bearer " + tok, "Idempotency-Key": "k"}, nil)
		if c.Status != http.StatusCreated {
			t.Fatalf("claim of %s: %d %s", user, c.Status, c.Raw)
		}
	}
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	configs := event.NewStore(r.Client(t))
	audits := func() int {
		au := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/audit?event=early", admin, nil)
		entries, _ := au.Body["entries"].([]any)
		return len(entries)
	}
	for _, step := range []struct {
		supply int
		status int
	}{
		{2, http.StatusConflict}, // 3 units are sold: the supply cannot go below them
		{7, http.StatusOK},
		{4, http.StatusOK},
		{1, http.StatusConflict},
	} {
		before, err := configs.Get(context.Background(), "early")
		if err != nil {
			t.Fatal(err)
		}
		logged := audits()
		raw, _ := json.Marshal(map[string]any{"supply": step.supply})
		a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/early", admin, raw)
		after, err := configs.Get(context.Background(), "early")
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != step.status {
			t.Errorf("supply %d: %d %s, want %d", step.supply, a.Status, a.Raw, step.status)
		}
		if a.Status != http.StatusOK {
			if after.Version != before.Version || after.Supply != before.Supply {
				t.Errorf("supply %d answered %d, yet the configuration changed: version %d → %d, supply %d → %d",
					step.supply, a.Status, before.Version, after.Version, before.Supply, after.Supply)
			}
			if got := audits(); got != logged {
				t.Errorf("supply %d answered %d: %d audit entries, want %d", step.supply, a.Status, got, logged)
			}
		} else if got := audits(); got != logged+1 {
			t.Errorf("supply %d saved: %d audit entries, want %d", step.supply, got, logged+1)
		}
		left, err := n.Claims.Remaining(context.Background(), claim.SaleOf(after))
		if err != nil {
			t.Fatal(err)
		}
		if left != after.OnSale()-3 {
			t.Errorf("supply %d answered %d: %d units in stock, the stored configuration has %d on sale and 3 are sold",
				step.supply, a.Status, left, after.OnSale())
		}
	}
}

// TestFencedSaveNeedsRebuild: a bucket's stock was laid on another Redis
// server (what a promoted replica shows after a failover). A save that
// changes the stock is refused with 409 needs_rebuild and changes nothing:
// the configuration, the stock and the fence stay as they were, and
// claims wait for the rebuild. A save that does not touch the stock goes
// through without laying anything.
func TestFencedSaveNeedsRebuild(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))
	nodetest.CreateSale(t, n, "fenced", openSale(5, 1, 30*time.Minute, 0, 1))
	rdb := r.Client(t)
	ctx := context.Background()
	configs := event.NewStore(rdb)
	cfg, err := configs.Get(ctx, "fenced")
	if err != nil {
		t.Fatal(err)
	}
	for b := range cfg.Buckets { // the servers' ids as a failover leaves them
		if err := rdb.HSet(ctx, "ar:{fenced#"+fmt.Sprint(b)+"}:stats", "epoch", "0123456789abcdef0123456789abcdef01234567").Err(); err != nil {
			t.Fatal(err)
		}
	}
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/fenced", admin, []byte(`{"supply":9}`))
	if a.Status != http.StatusConflict || nodetest.Str(a.Body, "code") != "needs_rebuild" || a.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("supply change on fenced stock: %d %s, want 409 needs_rebuild", a.Status, a.Raw)
	}
	if got, _ := configs.Get(ctx, "fenced"); got.Version != cfg.Version || got.Supply != cfg.Supply {
		t.Fatalf("refused save stored: version %d supply %d, want %d and %d", got.Version, got.Supply, cfg.Version, cfg.Supply)
	}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/fenced", admin, []byte(`{"name":"renamed"}`)); a.Status != http.StatusOK {
		t.Fatalf("rename on fenced stock: %d %s, want 200", a.Status, a.Raw)
	}
	for b := range cfg.Buckets {
		if id, _ := rdb.HGet(ctx, "ar:{fenced#"+fmt.Sprint(b)+"}:stats", "epoch").Result(); id != "0123456789abcdef0123456789abcdef01234567" {
			t.Fatalf("bucket %d's epoch is %q after the saves: the fence was moved", b, id)
		}
	}
	if left, err := n.Claims.Remaining(ctx, claim.SaleOf(cfg)); err != nil || left != cfg.OnSale() {
		t.Fatalf("stock %d (%v), want %d untouched", left, err, cfg.OnSale())
	}
}

// TestStaffSaveDoesNotStepTheFrontier: a staff save (an update, a pause, a
// resume) reloads the node's view of the sale, and the sale's view shows
// it at once, but only the tick steps the frontier: on a node whose tick
// is an hour away, the frontier's state in Redis is exactly what it was
// before the saves, however much Redis time passed. (Before, every save
// ran a frontier step through the view's refresh.)
func TestStaffSaveDoesNotStepTheFrontier(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	rdb := r.Client(t)
	ctx := context.Background()
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), Tick: time.Hour})
	if err := rdb.Set(ctx, queue.KeysFor("still").Seq, 1_000_000, 0).Err(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	nodetest.CreateSale(t, n, "still", map[string]any{
		"name": "still", "supply": 10, "per_user_limit": 1, "prequeue_opens_at": now.Add(-2 * time.Minute),
		"starts_at": now.Add(-time.Minute), "ends_at": now.Add(time.Hour), "admit_rate_per_second": 100,
	})
	const frontier = "ar:{still}:adm"
	if err := n.Snapshots.Refresh(ctx); err != nil { // a tick
		t.Fatal(err)
	}
	before, err := rdb.HGetAll(ctx, frontier).Result()
	if err != nil || before["t"] == "" {
		t.Fatalf("the frontier after a tick: %v %v, want it stepped", before, err)
	}
	// Redis time moves on: a step now would admit people and write its time.
	first, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "Redis time to pass 200 ms", nodetest.Patience, func() bool {
		at, err := rdb.Time(ctx).Result()
		return err == nil && at.Sub(first) >= 200*time.Millisecond
	})
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken}
	if a := nodetest.Call(t, http.MethodPut, n.URL()+"/admin/events/still", admin, []byte(`{"name":"still, renamed"}`)); a.Status != http.StatusOK {
		t.Fatalf("save: %d %s", a.Status, a.Raw)
	}
	if v, ok := n.Snapshots.Get("still"); !ok || v.Config.Name != "still, renamed" {
		t.Fatalf("the view after a save: %v %+v, want the saved name at once", ok, v)
	}
	for _, action := range []string{"pause", "resume"} {
		if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/events/still/"+action, admin, nil); a.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", action, a.Status, a.Raw)
		}
		if v, _ := n.Snapshots.Get("still"); v.Config.Paused != (action == "pause") {
			t.Fatalf("the view after %s: paused %v", action, v.Config.Paused)
		}
	}
	after, err := rdb.HGetAll(ctx, frontier).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("the frontier after three staff saves: %v, want it unstepped: %v", after, before)
	}
}
