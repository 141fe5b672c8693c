package retention

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestPerPerson: a lane's prefix is not part of a key's kind; Kept keys
// are not per-person, every other key of a sale is.
func TestPerPerson(t *testing.T) {
	for key, want := range map[string]bool{
		"ar:{ev}:cfg": false, "ar:{ev}:l:1:adm": false, "ar:{ev.3}:sf": false, "ar:{ev#0}:stock": false,
		"ar:{ev}:u:12": true, "ar:{ev}:l:2:u:7": true, "ar:{ev#0}:uc:ann": true, "ar:{ev#0}:sig:payment:00ff": true,
		"ar:{ev}:l:x:adm": true, // not a lane: a key of its own
		"no tag":          false,
	} {
		if got := PerPerson(key); got != want {
			t.Errorf("PerPerson(%q) = %v, want %v", key, got, want)
		}
	}
}

// TestSweep on a real redis-server: before the end nothing changes;
// after it every per-person key of the sale (its own tag, its join
// shards, its buckets) expires at end + period, a sooner expiry stays,
// Kept keys and another sale's keys keep none.
func TestSweep(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx := context.Background()
	end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	s := New(rdb, 2*time.Hour)
	for _, k := range []string{"ar:{ev}:u:1", "ar:{ev.1}:u:2", "ar:{ev#0}:uc:ann", "ar:{ev}:cfg", "ar:{ev-2}:u:1", "ar:{ev#0}:soon"} {
		if err := rdb.Set(ctx, k, 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	soon := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	rdb.PExpireAt(ctx, "ar:{ev#0}:soon", soon)
	if n, err := s.Sweep(ctx, "ev", end, end.Add(-time.Second)); err != nil || n != 0 {
		t.Fatalf("sweep before the end: %d keys, %v", n, err)
	}
	if ttl := rdb.PTTL(ctx, "ar:{ev}:u:1").Val(); ttl != -1 {
		t.Fatalf("a key got an expiry before the end: %v", ttl)
	}
	if _, err := s.Sweep(ctx, "ev", end, end); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		"ar:{ev}:u:1": end.Add(2 * time.Hour).UnixMilli(), "ar:{ev.1}:u:2": end.Add(2 * time.Hour).UnixMilli(),
		"ar:{ev#0}:uc:ann": end.Add(2 * time.Hour).UnixMilli(), "ar:{ev#0}:soon": soon.UnixMilli(),
		"ar:{ev}:cfg": -1, "ar:{ev-2}:u:1": -1,
	}
	for k, at := range want {
		if got, err := rdb.Do(ctx, "PEXPIRETIME", k).Int64(); err != nil || got != at {
			t.Errorf("%s expires at %d, want %d", k, got, at)
		}
	}
}
