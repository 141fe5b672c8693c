package limit

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestLocalBucket(t *testing.T) {
	l := NewLocal(0)
	lim := Limit{Rate: 10, Burst: 3}
	steps := []struct {
		at        time.Duration
		ok        bool
		retryMs   int64
		leftFloor int64
	}{
		{0, true, 0, 2},
		{0, true, 0, 1},
		{0, true, 0, 0},
		{0, false, 100, 0},                    // empty: one token in 100ms
		{50 * time.Millisecond, false, 50, 0}, // half a token
		{100 * time.Millisecond, true, 0, 0},  // refilled one
		{10 * time.Second, true, 0, 2},        // capped at the burst
		{10 * time.Second, true, 0, 1},        //
		{9 * time.Second, true, 0, 0},         // a clock going back refills nothing
		{9 * time.Second, false, 100, 0},      //
		{10*time.Second + 20*time.Millisecond, false, 80, 0},
	}
	for i, s := range steps {
		ok, left, retry := l.Take("k", lim, t0.Add(s.at))
		if ok != s.ok || retry.Milliseconds() != s.retryMs || int64(left) != s.leftFloor {
			t.Fatalf("step %d at %v: got ok=%v left=%.2f retry=%v, want ok=%v left≈%d retry=%dms",
				i, s.at, ok, left, retry, s.ok, s.leftFloor, s.retryMs)
		}
	}
}

func TestLocalKeysAreIndependentAndUnlimitedPasses(t *testing.T) {
	l := NewLocal(0)
	lim := Limit{Rate: 1, Burst: 1}
	if ok, _, _ := l.Take("a", lim, t0); !ok {
		t.Fatal("first take of a refused")
	}
	if ok, _, _ := l.Take("a", lim, t0); ok {
		t.Fatal("second take of a allowed, want refused")
	}
	if ok, _, _ := l.Take("b", lim, t0); !ok {
		t.Fatal("b refused: keys must not share a bucket")
	}
	for range 100 {
		if ok, _, _ := l.Take("c", Limit{}, t0); !ok {
			t.Fatal("an unlimited rule refused")
		}
	}
}

// TestLocalEviction fills the set past its bound: refilled buckets go
// first and change no decision; the set stays bounded under a flood.
func TestLocalEviction(t *testing.T) {
	l := NewLocal(localShards * 8) // 8 per shard
	lim := Limit{Rate: 1, Burst: 2}
	// A spent key that must survive eviction of refilled ones.
	l.Take("spent", lim, t0)
	l.Take("spent", lim, t0)
	for i := range 1000 {
		// Each has refilled by the next insert, two seconds later.
		l.Take(fmt.Sprint("idle", i), lim, t0.Add(-time.Hour+time.Duration(i)*2*time.Second))
	}
	if ok, _, _ := l.Take("spent", lim, t0); ok {
		t.Fatal("the spent bucket was forgotten while refilled ones could be dropped")
	}
	for i := range 10_000 {
		l.Take(fmt.Sprint("flood", i), lim, t0)
	}
	if n := l.Len(); n > localShards*8 {
		t.Fatalf("holds %d buckets, want at most %d", n, localShards*8)
	}
}

func TestShare(t *testing.T) {
	cases := []struct {
		lim   Limit
		nodes int
		want  Limit
	}{
		{Limit{Rate: 100, Burst: 50}, 2, Limit{Rate: 50, Burst: 25}},
		{Limit{Rate: 100, Burst: 50}, 0, Limit{Rate: 100, Burst: 50}},
		{Limit{Rate: 3, Burst: 1}, 4, Limit{Rate: 0.75, Burst: 1}},
		{Limit{Rate: 10}, 5, Limit{Rate: 2, Burst: 2}},
	}
	for _, tc := range cases {
		if got := tc.lim.share(tc.nodes); got != tc.want {
			t.Errorf("%+v shared by %d: got %+v, want %+v", tc.lim, tc.nodes, got, tc.want)
		}
	}
}

func TestKeysHaveTheirOwnHashTag(t *testing.T) {
	a := Rule{Budget: "join", Dim: User, Event: "e1", Value: "alice"}.Key()
	b := Rule{Budget: "join", Dim: User, Event: "e1", Value: "bob"}.Key()
	c := Rule{Budget: "claim", Dim: User, Event: "e1", Value: "alice"}.Key()
	g := Rule{Budget: "join", Dim: Global}.Key()
	if a == b || a == c || len(a) > 64 {
		t.Fatalf("keys %q %q %q: want distinct and short", a, b, c)
	}
	if g != "ar:{rl:join:global}" {
		t.Fatalf("global key %q", g)
	}
	for _, k := range []string{a, b, c, g} {
		if k[3] != '{' || k[len(k)-1] != '}' {
			t.Errorf("key %q: want the whole name after ar: as its hash tag", k)
		}
	}
}

// TestLocalTakeBytesSharesTake: TakeBytes spends the same bucket as Take
// for the same key, and a key buffer reused afterwards changes nothing it
// stored.
func TestLocalTakeBytesSharesTake(t *testing.T) {
	l := NewLocal(0)
	lim := Limit{Rate: 1, Burst: 2}
	buf := []byte("st:t:ev:abc")
	if ok, _, _ := l.TakeBytes(buf, lim, t0); !ok {
		t.Fatal("first TakeBytes refused")
	}
	copy(buf, "XXXXXXXXXXX") // the caller reuses its buffer
	if ok, _, _ := l.Take("st:t:ev:abc", lim, t0); !ok {
		t.Fatal("Take after TakeBytes refused: want the second token")
	}
	if ok, _, _ := l.TakeBytes([]byte("st:t:ev:abc"), lim, t0); ok {
		t.Fatal("third token granted: TakeBytes and Take do not share the bucket")
	}
	if l.Len() != 1 {
		t.Fatalf("%d buckets, want 1", l.Len())
	}
}
