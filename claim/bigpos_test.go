package claim

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/testenv"
)

// passPos is a bypass pass holder's position (admission.PassPosition):
// more significant digits than Redis's cjson keeps (14).
const passPos int64 = 1 << 50

// TestPassPositionRoundTrips claims as pass holders (position 2^50) and
// follows the claims through every reader of their records and events: the
// lookup, "my claims", the release reply, the expiry loop (in a bucket
// that also holds ordinary claims), the stream, the rebuild and the order
// worker. Each reads back exactly the position written, on redis-server
// and on the embedded default.
func TestPassPositionRoundTrips(t *testing.T) {
	eachRedis(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		now := time.Now().UTC()
		cfg := event.Config{ID: "bigpos", Name: "bigpos", Supply: 10, PerUserLimit: 1,
			StartsAt: now.Add(-time.Minute), EndsAt: now.Add(time.Hour), Buckets: 1}
		cfg.Defaults()
		configs := event.NewStore(e.rdb)
		if _, err := configs.Put(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		sale := SaleOf(cfg)
		if err := e.store.Lay(ctx, sale, cfg.OnSale()); err != nil {
			t.Fatal(err)
		}
		positions := map[string]int64{"keep": passPos, "release": passPos, "expire": passPos, "plain": 7, "lane": 3<<40 + 5}
		ttl := map[string]time.Duration{"expire": time.Millisecond, "plain": time.Millisecond}
		ids := map[string]string{}
		for _, u := range []string{"keep", "release", "expire", "plain", "lane"} {
			d := ttl[u]
			if d == 0 {
				d = time.Hour
			}
			res, err := e.svc.Claim(ctx, Request{Event: cfg.ID, User: u, IdemKey: "k", Pos: positions[u], Limit: 1, Buckets: 1, ClaimTTL: d})
			if err != nil {
				t.Fatalf("claim as %s: %v", u, err)
			}
			ids[u] = res.ClaimID
		}
		checkRecord := func(when, u string, want Status) {
			t.Helper()
			rec, err := e.store.Lookup(ctx, cfg.ID, ids[u])
			if err != nil {
				t.Errorf("%s: lookup of %s's claim: %v", when, u, err)
				return
			}
			if rec.Pos != positions[u] || rec.Status != want || rec.User != u {
				t.Errorf("%s: %s's claim reads %+v, want pos %d, status %s", when, u, rec, positions[u], want)
			}
		}
		for u := range ids {
			checkRecord("after the claim", u, StatusPending)
		}
		mine, err := e.store.Mine(ctx, sale, "keep")
		if err != nil || len(mine) != 1 || mine[0].Pos != passPos {
			t.Errorf("my claims: %+v %v, want one at position %d", mine, err, passPos)
		}
		rec, err := e.svc.Release(ctx, cfg.ID, ids["release"], "release")
		if err != nil || rec.Pos != passPos || rec.Status != StatusReleased {
			t.Errorf("release reply: %+v %v, want released at position %d", rec, err, passPos)
		}
		checkRecord("after its release", "release", StatusReleased)

		e.run(t, sale)
		testenv.WaitFor(t, "the short claims to expire", 30*time.Second, func() bool {
			got, err := e.store.Totals(ctx, sale)
			return err == nil && got.Released == 3 && got.Outbox == 0
		})
		checkRecord("after its expiry", "expire", StatusReleased)
		checkRecord("after its expiry", "plain", StatusReleased)

		evs, err := ReadEvents(ctx, e.js, cfg.ID)
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if len(evs) != 8 {
			t.Errorf("stream holds %d order events, want 5 granted and 3 released", len(evs))
		}
		users := map[string]string{}
		for u, id := range ids {
			users[id] = u
		}
		for _, oe := range evs {
			if want := positions[users[oe.ClaimID]]; oe.Pos != want {
				t.Errorf("stream: %s event of %s at position %d, want %d", oe.Type, oe.ClaimID, oe.Pos, want)
			}
		}

		rb := NewRebuilder(e.svc, e.js, configs)
		rep, err := rb.Rebuild(ctx, cfg.ID)
		if err != nil || rep.Granted != 5 || rep.After.Remaining != cfg.OnSale()-2 {
			t.Errorf("rebuild: %+v %v, want 5 granted, 3 released", rep, err)
		}
		for _, u := range []string{"keep", "lane"} {
			checkRecord("after the rebuild", u, StatusPending)
		}
		checkRecord("after the rebuild", "release", StatusReleased)

		w, err := NewWorker(ctx, e.store, e.js, WorkerConfig{OnError: func(err error) { t.Errorf("worker: %v", err) }})
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(wctx) }()
		defer func() { stop(); <-done }()
		testenv.WaitFor(t, "the worker to catch up", time.Minute, func() bool {
			lag, err := OrderLag(ctx, e.js)
			return err == nil && lag != nil && lag.Pending == 0 && lag.AckPending == 0
		})
		for u, id := range ids {
			o, _, err := w.order(ctx, orderKey(cfg.ID, id))
			if err != nil || o.Pos != positions[u] {
				t.Errorf("order of %s: %+v %v, want position %d", u, o, err, positions[u])
			}
		}
		checkRecord("after its confirmation", "keep", StatusConfirmed)
		checkRecord("after its confirmation", "lane", StatusConfirmed)
	})
}

// TestLegacyFloatPositions reads records an older node wrote through
// cjson (a pass holder's position as 1.1258999068426e+15) next to an
// unreadable one: lookups, "my claims", the release and its event, the
// expiry loop and the order worker read the position as 2^50, and the
// unreadable record holds up no other claim of its bucket.
func TestLegacyFloatPositions(t *testing.T) {
	eachRedis(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		const ev = "legacy"
		sale := Sale{ID: ev, Buckets: 1}
		if err := e.store.Lay(ctx, sale, 10); err != nil {
			t.Fatal(err)
		}
		k := bucketOf(ev, 0)
		ids := map[string]string{}
		for _, u := range []string{"old", "kept", "plain"} {
			pos, ttl := passPos, time.Millisecond
			if u == "plain" {
				pos = 9
			}
			if u == "kept" {
				ttl = time.Hour
			}
			res, err := e.svc.Claim(ctx, Request{Event: ev, User: u, IdemKey: "k", Pos: pos, Limit: 1, Buckets: 1, ClaimTTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			ids[u] = res.ClaimID
			if u == "plain" {
				continue
			}
			raw, err := e.rdb.HGet(ctx, k.records(), res.ClaimID).Result()
			if err != nil {
				t.Fatal(err)
			}
			old := strings.Replace(raw, `"pos":1125899906842624`, `"pos":1.1258999068426e+15`, 1)
			if !strings.Contains(old, `"pos":1.1258999068426e+15`) {
				t.Fatalf("record %s: %s, want a position to replace", res.ClaimID, raw)
			}
			if err := e.rdb.HSet(ctx, k.records(), res.ClaimID, old).Err(); err != nil {
				t.Fatal(err)
			}
		}
		const junk = "0-00000000000000000000dead"
		if err := e.rdb.HSet(ctx, k.records(), junk, `{"user":"x","pos":"nope"`).Err(); err != nil {
			t.Fatal(err)
		}
		if err := e.rdb.ZAdd(ctx, k.expiry(), redis.Z{Score: 1, Member: junk}).Err(); err != nil {
			t.Fatal(err)
		}
		if rec, err := e.store.Lookup(ctx, ev, ids["kept"]); err != nil || rec.Pos != passPos {
			t.Errorf("lookup of an older node's record: %+v %v, want position %d", rec, err, passPos)
		}
		if mine, err := e.store.Mine(ctx, sale, "kept"); err != nil || len(mine) != 1 || mine[0].Pos != passPos {
			t.Errorf("my claims from an older node's record: %+v %v, want position %d", mine, err, passPos)
		}
		e.run(t, sale)
		testenv.WaitFor(t, "the expiry loop to release the readable claims", 30*time.Second, func() bool {
			got, err := e.store.Totals(ctx, sale)
			return err == nil && got.Released == 2 && got.Outbox == 0
		})
		if rec, err := e.svc.Release(ctx, ev, ids["kept"], "kept"); err != nil || rec.Pos != passPos || rec.Status != StatusReleased {
			t.Errorf("release of an older node's record: %+v %v, want released at position %d", rec, err, passPos)
		}
		e.drained(t, sale)
		evs, err := ReadEvents(ctx, e.js, ev)
		if err != nil || len(evs) != 6 {
			t.Fatalf("stream: %d events %v, want 3 granted and 3 released", len(evs), err)
		}
		for _, oe := range evs {
			if want := map[bool]int64{true: 9, false: passPos}[oe.ClaimID == ids["plain"]]; oe.Pos != want {
				t.Errorf("stream: %s event of %s at position %d, want %d", oe.Type, oe.ClaimID, oe.Pos, want)
			}
		}
		w, err := NewWorker(ctx, e.store, e.js, WorkerConfig{OnError: func(err error) { t.Errorf("worker: %v", err) }})
		if err != nil {
			t.Fatal(err)
		}
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(wctx) }()
		defer func() { stop(); <-done }()
		testenv.WaitFor(t, "the worker to catch up", time.Minute, func() bool {
			lag, err := OrderLag(ctx, e.js)
			return err == nil && lag != nil && lag.Pending == 0 && lag.AckPending == 0
		})
		for _, u := range []string{"old", "kept"} {
			if o, _, err := w.order(ctx, orderKey(ev, ids[u])); err != nil || o.Pos != passPos || o.Status != StatusReleased {
				t.Errorf("order of %s: %+v %v, want released at position %d", u, o, err, passPos)
			}
		}
	})
}
