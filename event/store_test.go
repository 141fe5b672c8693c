package event

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

// TestPutBeforeUsesRedisTime saves under a lock that Redis TIME has not
// reached, then is refused under one it has passed, whatever the caller's
// clock says: the stored configuration is unchanged.
func TestPutBeforeUsesRedisTime(t *testing.T) {
	r := testenv.StartRedis(t)
	ctx := context.Background()
	s := NewStore(r.Client(t))
	c := valid()
	saved, at, err := s.PutBefore(ctx, c, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	next := saved
	next.Supply = 50
	if saved, _, err = s.PutBefore(ctx, next, at.Add(time.Hour)); err != nil || saved.Supply != 50 {
		t.Fatalf("before the lock: %+v %v", saved.Supply, err)
	}
	next = saved
	next.Supply = 70
	_, refusedAt, err := s.PutBefore(ctx, next, at.Add(-time.Millisecond))
	if !errors.Is(err, ErrLocked) || refusedAt.Before(at) {
		t.Fatalf("past the lock: %v at %v, want ErrLocked at Redis TIME ≥ %v", err, refusedAt, at)
	}
	got, err := s.Get(ctx, c.ID)
	if err != nil || got.Supply != 50 || got.Version != saved.Version {
		t.Fatalf("stored supply %d version %d (%v), want 50 and %d", got.Supply, got.Version, err, saved.Version)
	}
}
