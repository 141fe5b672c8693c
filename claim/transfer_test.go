package claim

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// stocks reads every bucket's stock and parked units.
func stocks(t *testing.T, e *env, sale Sale) (stock, parked []int64) {
	t.Helper()
	stock, parked, err := e.store.stockAndParked(context.Background(), sale, true)
	if err != nil {
		t.Fatal(err)
	}
	return stock, parked
}

func wantStocks(t *testing.T, e *env, ev string, stock, parked []int64) {
	t.Helper()
	gs, gp := stocks(t, e, Sale{ID: ev, Buckets: len(stock)})
	if fmt.Sprint(gs) != fmt.Sprint(stock) || fmt.Sprint(gp) != fmt.Sprint(parked) {
		t.Fatalf("stock %v parked %v, want %v and %v", gs, gp, stock, parked)
	}
}

// TestTransferSteps runs the three transfer steps one by one, skips each
// in turn as a crash would, and lets the recovery sweep finish: units are
// credited exactly once, never lost, never created.
func TestTransferSteps(t *testing.T) {
	eachRedis(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		sale := Sale{ID: "xfer", Buckets: 2}
		lay := func() {
			t.Helper()
			e.rdb.FlushAll(ctx)
			if err := e.store.Lay(ctx, sale, 20); err != nil {
				t.Fatal(err)
			}
			e.rdb.Set(ctx, bucketOf("xfer", 0).stock(), 0, 0) // bucket 0 sold its 10
			e.rdb.HSet(ctx, bucketOf("xfer", 0).stats(), "granted", 10)
		}
		recoverAll := func() int {
			t.Helper()
			n, err := e.svc.recoverTransfers(ctx, sale, 0)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}

		t.Run("whole", func(t *testing.T) {
			lay()
			tr, err := e.store.transferOut(ctx, "xfer", 1, 0, 16)
			if err != nil || tr.N != 5 {
				t.Fatalf("donate: %+v %v, want 5 units (half of 10)", tr, err)
			}
			wantStocks(t, e, "xfer", []int64{0, 5}, []int64{0, 5})
			if code, err := e.store.transferIn(ctx, "xfer", tr); err != nil || code != acceptCredited {
				t.Fatalf("accept: %d %v", code, err)
			}
			if code, err := e.store.transferIn(ctx, "xfer", tr); err != nil || code != acceptRepeat {
				t.Fatalf("accept again: %d %v, want a repeat", code, err)
			}
			wantStocks(t, e, "xfer", []int64{5, 5}, []int64{0, 5})
			if err := e.store.transferSettle(ctx, "xfer", tr); err != nil {
				t.Fatal(err)
			}
			wantStocks(t, e, "xfer", []int64{5, 5}, []int64{0, 0})
			e.totals(t, sale, 20)
		})
		t.Run("crash after donate", func(t *testing.T) {
			lay()
			if _, err := e.store.transferOut(ctx, "xfer", 1, 0, 3); err != nil {
				t.Fatal(err)
			}
			wantStocks(t, e, "xfer", []int64{0, 7}, []int64{0, 3}) // parked: undersold for a moment
			e.totals(t, sale, 20)
			if n := recoverAll(); n != 1 {
				t.Fatalf("recovered %d transfers, want 1", n)
			}
			wantStocks(t, e, "xfer", []int64{3, 7}, []int64{0, 0})
			if n := recoverAll(); n != 0 {
				t.Fatalf("recovered %d transfers again, want 0", n)
			}
			e.totals(t, sale, 20)
		})
		t.Run("crash after accept", func(t *testing.T) {
			lay()
			tr, _ := e.store.transferOut(ctx, "xfer", 1, 0, 4)
			if _, err := e.store.transferIn(ctx, "xfer", tr); err != nil {
				t.Fatal(err)
			}
			recoverAll() // accepts again (a repeat), then settles
			wantStocks(t, e, "xfer", []int64{4, 6}, []int64{0, 0})
			e.totals(t, sale, 20)
		})
		t.Run("stale generation", func(t *testing.T) {
			lay()
			if _, err := e.store.transferOut(ctx, "xfer", 1, 0, 4); err != nil {
				t.Fatal(err)
			}
			// A rebuild ran meanwhile: it re-laid the stock (the parked units
			// included) and started a new generation.
			for b := range 2 {
				e.rdb.Set(ctx, bucketOf("xfer", b).gen(), "42", 0)
			}
			recoverAll()
			wantStocks(t, e, "xfer", []int64{0, 6}, []int64{0, 0}) // never credited twice
		})
		t.Run("frozen", func(t *testing.T) {
			lay()
			e.rdb.Set(ctx, bucketOf("xfer", 1).frozen(), "rebuild@1", 0)
			if _, err := e.store.transferOut(ctx, "xfer", 1, 0, 4); !errors.Is(err, ErrPaused) {
				t.Fatalf("donate on a frozen bucket: %v, want ErrPaused", err)
			}
		})
	})
}

// TestStealAndSoldOut claims through the Service on two buckets whose
// stock sits in one: users of the empty bucket get units from the other,
// units parked by a crashed transfer are not "sold out", and sold out comes
// only when nothing is left anywhere.
func TestStealAndSoldOut(t *testing.T) {
	eachRedis(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		const ev = "steal"
		if err := e.store.Lay(ctx, Sale{ID: ev, Buckets: 2}, 6); err != nil {
			t.Fatal(err)
		}
		users := map[int][]string{}
		for i := 0; len(users[0]) < 8 || len(users[1]) < 8; i++ {
			u := fmt.Sprint("user", i)
			users[HomeBucket(u, 2)] = append(users[HomeBucket(u, 2)], u)
		}
		claim := func(u string) error {
			_, err := e.svc.Claim(ctx, Request{Event: ev, User: u, IdemKey: "k", Limit: 1, Buckets: 2})
			return err
		}
		// Bucket 0 sells its 3 units, then its users steal from bucket 1.
		for _, u := range users[0][:5] {
			if err := claim(u); err != nil {
				t.Fatalf("claim %s: %v", u, err)
			}
		}
		// Park bucket 1's last unit in a transfer whose donor "crashed".
		tr, err := e.store.transferOut(ctx, ev, 1, 0, 16)
		if err != nil || tr.N != 1 {
			t.Fatalf("donate: %+v %v", tr, err)
		}
		if err := claim(users[1][0]); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("claim while a unit is parked: %v, want a retryable ErrUnavailable, not sold out", err)
		}
		if _, err := e.svc.recoverTransfers(ctx, Sale{ID: ev, Buckets: 2}, 0); err != nil {
			t.Fatal(err)
		}
		if err := claim(users[1][1]); err != nil {
			t.Fatalf("claim after recovery: %v", err)
		}
		if err := claim(users[1][2]); !errors.Is(err, ErrSoldOut) {
			t.Fatalf("claim with no stock anywhere: %v, want ErrSoldOut", err)
		}
		got := e.totals(t, Sale{ID: ev, Buckets: 2}, 6)
		if got.Granted != 6 || got.Remaining != 0 || got.Parked != 0 {
			t.Errorf("totals %+v, want 6 granted, nothing left", got)
		}
	})
}

// TestRefillSkipsRefusingDonor: one donor bucket refuses (its server failed
// over: the fence stops it) while another holds stock. A refill must take
// the stock from the other instead of failing the claim.
func TestRefillSkipsRefusingDonor(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	const ev, buckets = "donors", 3
	if err := e.store.Lay(ctx, Sale{ID: ev, Buckets: buckets}, 30); err != nil {
		t.Fatal(err)
	}
	// Bucket 1 was laid on another server: it refuses.
	if err := e.rdb.HSet(ctx, bucketOf(ev, 1).stats(), "epoch", "another-server").Err(); err != nil {
		t.Fatal(err)
	}
	for i, n := 0, 0; n < 12; i++ {
		u := fmt.Sprint("u", i)
		if HomeBucket(u, buckets) != 0 {
			continue
		}
		n++
		// The home bucket is empty; bucket 2 holds one unit, bucket 1 ten.
		if err := e.rdb.Set(ctx, bucketOf(ev, 0).stock(), 0, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := e.rdb.Set(ctx, bucketOf(ev, 2).stock(), 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Claim(ctx, Request{Event: ev, User: u, IdemKey: "k", Limit: 1, Buckets: buckets}); err != nil {
			t.Fatalf("claim %d of %s: %v, want the unit of bucket 2", n, u, err)
		}
	}
	// With no other donor, the refusal stands: not sold out.
	u := "last"
	for i := 0; HomeBucket(u, buckets) != 0; i++ {
		u = fmt.Sprint("last", i)
	}
	if _, err := e.svc.Claim(ctx, Request{Event: ev, User: u, IdemKey: "k", Limit: 1, Buckets: buckets}); !errors.Is(err, ErrNeedsRebuild) {
		t.Errorf("claim with only a refusing donor: %v, want ErrNeedsRebuild", err)
	}
}
