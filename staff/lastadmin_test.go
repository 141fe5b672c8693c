package staff_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/staff"
)

// TestLastAdminRace: two admins demote (or delete) each other at the same
// moment, round after round, on a real redis-server. One of the two may
// win; never both, so an admin always remains (issue 34: zero admins
// left the shared admin token full admin again).
func TestLastAdminRace(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx := context.Background()
	a := staff.NewAccounts(rdb)
	for _, n := range []string{"ada", "bob"} {
		if err := a.Create(ctx, n, staff.Admin, password(t, "password of "+n)); err != nil {
			t.Fatal(err)
		}
	}
	pw := password(t, "a password for every round") // hashed once: the rounds race, not hash
	const rounds = 60
	for round := range rounds {
		del := round%3 == 2 // every third round, one deletes while the other demotes
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, n := range []string{"ada", "bob"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if del && i == 1 {
					_, errs[i] = a.Delete(ctx, n)
					return
				}
				_, errs[i] = a.SetRole(ctx, n, staff.Viewer)
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil && !errors.Is(err, staff.ErrLastAdmin) {
				t.Fatalf("round %d, change %d: %v", round, i, err)
			}
		}
		if errs[0] == nil && errs[1] == nil {
			t.Fatalf("round %d: both admins were demoted or removed at once", round)
		}
		if has, err := a.HasAdmin(ctx); err != nil || !has {
			t.Fatalf("round %d: HasAdmin = %v, %v; want an admin left", round, has, err)
		}
		// Put both back as admins for the next round.
		for _, n := range []string{"ada", "bob"} {
			if _, err := a.Get(ctx, n); errors.Is(err, staff.ErrNotFound) {
				if err := a.Create(ctx, n, staff.Admin, pw); err != nil {
					t.Fatal(err)
				}
			} else if _, err := a.SetRole(ctx, n, staff.Admin); err != nil {
				t.Fatal(err)
			}
		}
	}
}
