package claim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"
)

// hashOf is a stand-in keyed hash (32 hex digits) of a signal value.
func hashOf(v string) string {
	s := sha256.Sum256([]byte(v))
	return hex.EncodeToString(s[:16])
}

// grantAll grants n claims of ev on bucket b in script batches of 100,
// user i carrying the signals sigs(i) (recorded, not limited).
func grantAll(t testing.TB, e *env, ev string, buckets, n int, sigs func(i int) []Signal) {
	t.Helper()
	ctx := context.Background()
	byBucket := map[int][]request{}
	flush := func(b int) {
		if len(byBucket[b]) == 0 {
			return
		}
		out, err := e.store.grant(ctx, ev, b, byBucket[b])
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.code != codeGranted {
				t.Fatalf("grant: code %d", o.code)
			}
		}
		byBucket[b] = byBucket[b][:0]
	}
	now := time.Now()
	for i := range n {
		user := fmt.Sprint("user-", i)
		b := HomeBucket(user, buckets)
		byBucket[b] = append(byBucket[b], request{Event: ev, User: user, IdemKey: "k", Pos: int64(i + 1), Limit: 1,
			IdemTTL: time.Hour, ClaimTTL: time.Hour, Now: now, Signals: sigs(i), SignalsUntil: now.Add(time.Hour)})
		if len(byBucket[b]) == 100 {
			flush(b)
		}
	}
	for b := range buckets {
		flush(b)
	}
}

// TestSweepGroups: claims sharing a payment instrument, a device or a
// network are grouped by the shared value's hash, scored by size ×
// weight, strongest first; released and cancelled claims leave their
// groups; a group is never listed by a raw value; Group reads one
// group's live claims from its signal sets. On one Redis and a Redis
// Cluster.
func TestSweepGroups(t *testing.T) {
	onRedisAndCluster(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		const ev, buckets = "sweep", 3
		sale := Sale{ID: ev, Buckets: buckets}
		if err := e.store.Lay(ctx, sale, 100); err != nil {
			t.Fatal(err)
		}
		// users 0-3 share a card, 4-5 a device; 0-9 one network.
		grantAll(t, e, ev, buckets, 12, func(i int) []Signal {
			card := fmt.Sprint("card", i)
			if i < 4 {
				card = "card0"
			}
			sigs := []Signal{{Dim: SignalPayment, Hash: hashOf(card), Max: NoLimit}}
			dev := fmt.Sprint("dev", i)
			if i == 4 || i == 5 {
				dev = "shared-phone"
			}
			sigs = append(sigs, Signal{Dim: SignalDevice, Hash: hashOf(dev), Max: NoLimit})
			if i < 10 {
				sigs = append(sigs, Signal{Dim: SignalNetwork, Hash: hashOf("10.0.0.0/24"), Max: NoLimit})
			}
			return sigs
		})
		sw, err := e.store.Sweep(ctx, sale, SweepOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sw.Granted != 12 || sw.Total != 3 || len(sw.Groups) != 3 {
			t.Fatalf("sweep: %d granted, %d groups (%+v), want 12 and 3", sw.Granted, sw.Total, sw.Groups)
		}
		want := []struct {
			dim         string
			size, score int
		}{{SignalPayment, 4, 20}, {SignalNetwork, 10, 10}, {SignalDevice, 2, 6}}
		for i, w := range want {
			g := sw.Groups[i]
			if g.Dim != w.dim || g.Size != w.size || g.Score != w.score || len(g.Claims) != w.size || g.Users != w.size {
				t.Errorf("group %d: %s size %d score %d users %d, want %s size %d score %d", i, g.Dim, g.Size, g.Score, g.Users, w.dim, w.size, w.score)
			}
		}
		if g := sw.Groups[0]; g.Hash != hashOf("card0") {
			t.Errorf("payment group's hash %s, want the card's keyed hash", g.Hash)
		}
		card := sw.Groups[0].Claims
		// One of the ring released, one cancelled: both leave the group.
		u := card[0].User
		if _, err := e.svc.Release(ctx, ev, card[0].ID, u); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Cancel(ctx, sale, Cancellation{IDs: []string{card[1].ID}, Reason: "ring"}); err != nil {
			t.Fatal(err)
		}
		sw, err = e.store.Sweep(ctx, sale, SweepOptions{Dim: SignalPayment})
		if err != nil || sw.Total != 1 || sw.Groups[0].Size != 2 {
			t.Errorf("payment sweep after a release and a cancellation: %+v %v, want one group of 2", sw, err)
		}
		live, err := e.store.Group(ctx, sale, SignalPayment, hashOf("card0"))
		if err != nil || len(live) != 2 {
			t.Errorf("group's live claims: %+v %v, want 2", live, err)
		}
		page, err := e.store.Sweep(ctx, sale, SweepOptions{Limit: 1, Offset: 1, MaxClaims: 3})
		if err != nil || len(page.Groups) != 1 || page.Groups[0].Dim != SignalNetwork || len(page.Groups[0].Claims) != 3 || page.Groups[0].Size != 8 {
			t.Errorf("second page of one group, 3 claims listed: %+v %v", page, err)
		}
	})
}

// BenchmarkSweep100k sweeps 100,000 granted claims on a real
// redis-server, each with a payment, a device and a network signal:
// rings of 3 share a card, 50 claims a network. The figure is in
// bench/RESULTS.md: go test -run '^$' -bench BenchmarkSweep100k -benchtime 5x ./claim/
func BenchmarkSweep100k(b *testing.B) {
	e := singleRedisB(b)
	ctx := context.Background()
	const ev, buckets, n = "sweepbench", 8, 100_000
	sale := Sale{ID: ev, Buckets: buckets}
	if err := e.store.Lay(ctx, sale, 2*n); err != nil { // home buckets are uneven
		b.Fatal(err)
	}
	grantAll(b, e, ev, buckets, n, func(i int) []Signal {
		return []Signal{
			{Dim: SignalPayment, Hash: hashOf(fmt.Sprint("card", i/3)), Max: NoLimit},
			{Dim: SignalDevice, Hash: hashOf(fmt.Sprint("dev", i)), Max: NoLimit},
			{Dim: SignalNetwork, Hash: hashOf(fmt.Sprint("net", i/50)), Max: NoLimit},
		}
	})
	b.ResetTimer()
	for range b.N {
		sw, err := e.store.Sweep(ctx, sale, SweepOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if sw.Granted != n {
			b.Fatalf("swept %d claims, want %d", sw.Granted, n)
		}
	}
}
