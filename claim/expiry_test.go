package claim

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestExpiry lets unconfirmed claims expire: their units return to their
// buckets, released events reach the stream once each, the units are sold
// again — also to the same users, whose limit counts only held claims — and
// the totals balance. Confirmed claims never expire.
func TestExpiry(t *testing.T) {
	eachRedis(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		const ev, units, buckets = "expiry", 40, 2
		sale := Sale{ID: ev, Buckets: buckets}
		if err := e.store.Lay(ctx, sale, units); err != nil {
			t.Fatal(err)
		}
		claim := func(user, key string, ttl time.Duration) (Result, error) {
			return e.svc.Claim(ctx, Request{Event: ev, User: user, IdemKey: key, Limit: 1, Buckets: buckets, ClaimTTL: ttl})
		}
		var confirmed []string
		for i := range units {
			res, err := claim(fmt.Sprint("e", i), "first", 300*time.Millisecond)
			if err != nil {
				t.Fatalf("claim %d: %v", i, err)
			}
			if i%4 == 0 {
				if st, err := e.store.Confirm(ctx, ev, res.ClaimID); err != nil || st != "confirmed" {
					t.Fatalf("confirm: %q %v", st, err)
				}
				confirmed = append(confirmed, res.ClaimID)
			}
		}
		if _, err := claim("late", "first", time.Minute); !errors.Is(err, ErrSoldOut) {
			t.Fatalf("claim with everything claimed: %v, want sold out", err)
		}
		e.run(t, sale)
		const expired = units - units/4
		testenv.WaitFor(t, "unconfirmed claims to expire", 10*time.Second, func() bool {
			got, err := e.store.Totals(ctx, sale)
			return err == nil && got.Released == expired && got.Outbox == 0
		})
		got := e.totals(t, sale, units)
		if got.Remaining != expired {
			t.Errorf("remaining %d after expiry, want %d", got.Remaining, expired)
		}
		for _, id := range confirmed {
			if rec, err := e.store.Lookup(ctx, ev, id); err != nil || rec.Status != "confirmed" {
				t.Errorf("confirmed claim %s: %+v %v", id, rec, err)
			}
		}
		// The units sell again: to newcomers and to users whose claim expired
		// (with a new key; the old key still names the released claim).
		for i := range expired {
			user := fmt.Sprint("again", i)
			if i%2 == 0 {
				user = fmt.Sprint("e", i)
				if i%4 == 0 {
					user = fmt.Sprint("e", i+1) // e0, e4, ... are confirmed
				}
			}
			res, err := claim(user, "second", time.Hour)
			if err != nil || res.Replay {
				t.Fatalf("claim %s again: %+v %v", user, res, err)
			}
		}
		if res, err := claim("e1", "first", time.Hour); err != nil || !res.Replay || res.Status != "released" {
			t.Errorf("replay of an expired claim: %+v %v, want the released claim", res, err)
		}
		if _, err := claim("late", "again", time.Hour); !errors.Is(err, ErrSoldOut) {
			t.Fatalf("claim after the resale: %v, want sold out", err)
		}
		e.drained(t, sale)
		got = e.totals(t, sale, units)
		if got.Granted != units+expired || got.Released != expired || got.Remaining != 0 {
			t.Errorf("totals %+v, want %d granted, %d released, none left", got, units+expired, expired)
		}
		granted, released := e.streamCheck(t, ev)
		if len(granted) != units+expired || len(released) != expired {
			t.Errorf("stream: %d granted, %d released; want %d and %d", len(granted), len(released), units+expired, expired)
		}
	})
}

// TestRelease releases claims as their user and as an admin: exactly once,
// never someone else's claim, never a confirmed one.
func TestRelease(t *testing.T) {
	eachRedis(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		const ev = "release"
		if err := e.store.Lay(ctx, Sale{ID: ev, Buckets: 1}, 3); err != nil {
			t.Fatal(err)
		}
		e.run(t, Sale{ID: ev, Buckets: 1})
		ids := map[string]string{}
		for _, u := range []string{"ann", "bob", "cyd"} {
			res, err := e.svc.Claim(ctx, Request{Event: ev, User: u, IdemKey: "k", Limit: 1, Buckets: 1})
			if err != nil {
				t.Fatal(err)
			}
			ids[u] = res.ClaimID
		}
		if _, err := e.svc.Release(ctx, ev, ids["ann"], "bob"); !errors.Is(err, ErrNotFound) {
			t.Errorf("bob releasing ann's claim: %v, want ErrNotFound", err)
		}
		for range 2 {
			rec, err := e.svc.Release(ctx, ev, ids["ann"], "ann")
			if err != nil || rec.Status != "released" {
				t.Fatalf("ann releasing her claim: %+v %v", rec, err)
			}
		}
		if rec, err := e.svc.Release(ctx, ev, ids["bob"], ""); err != nil || rec.Status != "released" {
			t.Fatalf("admin releasing bob's claim: %+v %v", rec, err)
		}
		if _, err := e.store.Confirm(ctx, ev, ids["cyd"]); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Release(ctx, ev, ids["cyd"], ""); !errors.Is(err, ErrConfirmed) {
			t.Errorf("releasing a confirmed claim: %v, want ErrConfirmed", err)
		}
		mine, err := e.store.Mine(ctx, Sale{ID: ev, Buckets: 1}, "ann")
		if err != nil || len(mine) != 1 || mine[0].Status != "released" {
			t.Errorf("ann's claims: %+v %v", mine, err)
		}
		e.drained(t, Sale{ID: ev, Buckets: 1})
		got := e.totals(t, Sale{ID: ev, Buckets: 1}, 3)
		if got.Released != 2 || got.Remaining != 2 {
			t.Errorf("totals %+v, want 2 released and 2 left", got)
		}
		_, released := e.streamCheck(t, ev)
		if len(released) != 2 {
			t.Errorf("stream holds %d released events, want 2", len(released))
		}
	})
}

// TestExpireDropsIndexWithoutRecord: an expiry index entry whose claim
// record is gone would block the head of the index forever; the expiry
// loop drops it and still releases the claims due behind it.
func TestExpireDropsIndexWithoutRecord(t *testing.T) {
	e := singleRedis(t)
	ctx := context.Background()
	const ev = "ghost"
	if err := e.store.Lay(ctx, Sale{ID: ev, Buckets: 1}, 5); err != nil {
		t.Fatal(err)
	}
	res, err := e.svc.Claim(ctx, Request{Event: ev, User: "u", IdemKey: "k", Limit: 1, Buckets: 1, ClaimTTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	k := bucketOf(ev, 0)
	if err := e.rdb.ZAdd(ctx, k.expiry(), redis.Z{Score: 1, Member: "0-0123456789abcdef01234567"}).Err(); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, "the claim to be due", 5*time.Second, func() bool {
		ids, _, _, err := e.store.due(ctx, ev, 0, time.Now(), 10)
		return err == nil && len(ids) == 1
	})
	if n, err := e.svc.expire(ctx, Sale{ID: ev, Buckets: 1}, 10); err != nil || n != 1 {
		t.Fatalf("expire: %d %v, want the real claim released", n, err)
	}
	if n, err := e.rdb.ZCard(ctx, k.expiry()).Result(); err != nil || n != 0 {
		t.Errorf("expiry index holds %d entries (%v), want none", n, err)
	}
	if rec, err := e.store.Lookup(ctx, ev, res.ClaimID); err != nil || rec.Status != "released" {
		t.Errorf("claim %+v %v, want released", rec, err)
	}
}
