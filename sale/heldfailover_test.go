package sale_test

import (
	"context"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/sale"
	"github.com/redis/go-redis/v9"
)

// TestHeldSetAfterFailoverRegrowsPastOffset: node X has read the held log
// on the primary further than the replica copied it; the primary dies and
// the replica is promoted, and before X reads again the other nodes' steps
// grow the promoted server's log back past X's offset, with other
// entries. X must hold what the promoted server holds: a position held
// there (a credited no-show, never present) must get no token from X.
//
// Before the held log's reply named the server it was read on, X reset its
// copy only for a log shorter than its offset: it read on from its offset,
// skipped the promoted server's entries before it, and position 3 was not
// held on X.
func TestHeldSetAfterFailoverRegrowsPastOffset(t *testing.T) {
	primary := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, testenv.WithReplicaOf(primary.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// X's connections go to whichever server is the primary (Sentinel's job).
	var addr atomic.Value
	addr.Store(primary.Addr())
	xc := redis.NewClient(&redis.Options{Addr: primary.Addr(), Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr.Load().(string))
	}})
	t.Cleanup(func() { _ = xc.Close() })
	const id = "heldfo"
	now := time.Now()
	g := newSaleRig(t, xc, event.Config{
		ID: id, Supply: 100, PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Minute),
		EndsAt: now.Add(time.Hour), AdmitRatePerSecond: 1000, NoShowGraceSeconds: 1,
		MaxActive: 100, AdmissionTTLSeconds: 1,
	}, 2)
	x := g.snaps

	// Positions 1 and 2 never come: held, on the primary and the replica.
	g.tick(t, "positions 1 and 2 held", func(*admission.Sale) bool { return x.Held(id, 1) && x.Held(id, 2) })
	if err := testenv.WaitSynced(ctx, primary.Client(t), replica.Client(t), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// The replica stops copying; on the primary both come after all, and
	// X reads the log to its end: [1 2 -1 -2].
	if err := replica.Client(t).Do(ctx, "CLIENT", "PAUSE", 300000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	x.Present(id, 1)
	x.Present(id, 2)
	g.tick(t, "positions 1 and 2 let in on X", func(*admission.Sale) bool { return !x.Held(id, 1) && !x.Held(id, 2) })
	heldLog := queue.LaneTag(id, 0) + "heldlog"
	if n, err := xc.LLen(ctx, heldLog).Result(); err != nil || n != 4 {
		t.Fatalf("the primary's held log: %d entries (%v), want 4", n, err)
	}

	primary.Kill(t)
	rc := replica.Client(t)
	for _, cmd := range [][]any{{"REPLICAOF", "NO", "ONE"}, {"CLIENT", "UNPAUSE"}} {
		if err := rc.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	addr.Store(replica.Addr())

	// On the promoted server (log [1 2]) two more join and never come;
	// node Y's steps hold them once the failover's hold has passed: the log
	// grows to [1 2 3 4], past X's offset, before X reads again.
	if err := rc.Set(ctx, queue.KeysFor(id).Seq, 4, 0).Err(); err != nil {
		t.Fatal(err)
	}
	y := sale.NewSnapshots(event.NewStore(rc), admission.NewFrontier(rc), claim.NewStore(rc))
	testenv.WaitFor(t, "positions 3 and 4 held on the promoted server", 30*time.Second, func() bool {
		if err := y.StepOne(ctx, id); err != nil {
			t.Fatal(err)
		}
		v, _ := y.Get(id)
		return !v.HeldBehind && y.Held(id, 3) && y.Held(id, 4)
	})
	truth, err := rc.LRange(ctx, heldLog, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the promoted server's held log: %v", truth)
	// The first step fenced the queue's counter (no fence on a promoted
	// server: it moves as at a pace of one a second), so the numbers it
	// skipped, nobody's, are held after 3 and 4.
	if len(truth) < 4 || !slices.Equal(truth[:4], []string{"1", "2", "3", "4"}) {
		t.Fatalf("the promoted server's held log %v, want [1 2 3 4 ...]", truth)
	}

	// X reads again, on the promoted server.
	for range 2 {
		if err := x.StepOne(ctx, id); err != nil {
			t.Fatal(err)
		}
		for _, pos := range []int64{3, 4, 1, 2} { // 3 and 4 were never present anywhere
			if x.Held(id, pos) != y.Held(id, pos) {
				t.Fatalf("position %d: held %v on X, %v on the promoted server (node Y): X skipped the promoted server's entries past the failover",
					pos, x.Held(id, pos), y.Held(id, pos))
			}
		}
	}
	if v, _ := x.Get(id); v.HeldBehind {
		t.Fatalf("X still behind the held log after two reads")
	}
}
