package staff_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/staff"
)

// TestSignInLinks: a link signs its account in once, on Redis; a second
// use, a concurrent one, one past its expiry (the caller's clock, or
// Redis's) and a made-up or malformed token are ErrLinkSpent; Redis keeps
// the token's hash only.
func TestSignInLinks(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx := context.Background()
	links := staff.NewSignInLinks(rdb)
	acc := staff.Account{Name: "demo", Gen: "AAAAAAAAAAAAAAAAAAAAAA"}

	tok, err := links.Mint(ctx, acc, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := rdb.Keys(ctx, "ar:{staff}:signin:*").Result()
	if len(keys) != 1 || strings.Contains(keys[0], tok) {
		t.Fatalf("stored keys %q: want one, holding no token", keys)
	}
	if v, _ := rdb.Get(ctx, keys[0]).Result(); strings.Contains(v, tok) {
		t.Fatalf("stored value %q holds the token", v)
	}
	if ttl, _ := rdb.PTTL(ctx, keys[0]).Result(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("stored link's PTTL %s, want at most a minute", ttl)
	}
	got, err := links.Redeem(ctx, tok, time.Now())
	if err != nil || got.Name != acc.Name || got.Gen != acc.Gen {
		t.Fatalf("first Redeem = %+v, %v; want %+v", got, err, acc)
	}
	if _, err := links.Redeem(ctx, tok, time.Now()); !errors.Is(err, staff.ErrLinkSpent) {
		t.Fatalf("second Redeem = %v, want ErrLinkSpent", err)
	}

	// Many concurrent redemptions of one link: exactly one signs in.
	tok, err = links.Mint(ctx, acc, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := links.Redeem(ctx, tok, time.Now()); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, staff.ErrLinkSpent) {
				t.Errorf("concurrent Redeem: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d of 20 concurrent redemptions signed in, want 1", wins)
	}

	// An expired link: refused at its expiry by the caller's clock (the
	// embedded Redis never expires keys), and gone by Redis's own.
	now := time.Now()
	tok, err = links.Mint(ctx, acc, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := links.Redeem(ctx, tok, now.Add(time.Minute)); !errors.Is(err, staff.ErrLinkSpent) {
		t.Fatalf("Redeem at the expiry = %v, want ErrLinkSpent", err)
	}
	tok, err = links.Mint(ctx, acc, time.Now(), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait.Until(5*time.Second, 10*time.Millisecond, func() error {
		if k, _ := rdb.Keys(ctx, "ar:{staff}:signin:*").Result(); len(k) != 0 {
			return fmt.Errorf("%d links still stored", len(k))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := links.Redeem(ctx, tok, time.Now()); !errors.Is(err, staff.ErrLinkSpent) {
		t.Fatalf("Redeem after Redis expired it = %v, want ErrLinkSpent", err)
	}

	for name, bad := range map[string]string{
		"made up":   strings.Repeat("A", 43),
		"empty":     "",
		"too long":  tok + "A",
		"truncated": tok[:42],
		"a pattern": strings.Repeat("*", 43),
	} {
		if _, err := links.Redeem(ctx, bad, time.Now()); !errors.Is(err, staff.ErrLinkSpent) {
			t.Errorf("Redeem of a %s token = %v, want ErrLinkSpent", name, err)
		}
	}
	for name, a := range map[string]staff.Account{
		"no name":        {Gen: acc.Gen},
		"a bad name":     {Name: "Demo User", Gen: acc.Gen},
		"a spaced gen":   {Name: "demo", Gen: "a b"},
		"no time to use": {Name: "demo", Gen: acc.Gen},
	} {
		ttl := time.Minute
		if name == "no time to use" {
			ttl = 0
		}
		if _, err := links.Mint(ctx, a, time.Now(), ttl); err == nil {
			t.Errorf("Mint for %s: accepted, want refused", name)
		}
	}
}
