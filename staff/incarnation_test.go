package staff_test

import (
	"context"
	"errors"
	"testing"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/staff"
)

// TestIncarnation: sessions and API keys are bound to an account's
// incarnation, not its name (issue 34). A key record left behind by a
// delete (a NewKey racing the delete leaves one) does not work for the
// account re-created under the same name; a password or role change
// gives a new incarnation and removes the account's keys.
func TestIncarnation(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx := context.Background()
	a := staff.NewAccounts(rdb)
	pw := password(t, "password of olga")
	if err := a.Create(ctx, "olga", staff.Operator, pw); err != nil {
		t.Fatal(err)
	}
	first, _ := a.Get(ctx, "olga")
	key, prefix, err := a.NewKey(ctx, "olga")
	if err != nil {
		t.Fatal(err)
	}
	left, _ := rdb.HGetAll(ctx, "ar:{staff}:apikey:"+prefix).Result()
	if _, err := a.Delete(ctx, "olga"); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, "ar:{staff}:apikey:"+prefix, left) // the record a racing NewKey leaves behind
	if err := a.Create(ctx, "olga", staff.Admin, pw); err != nil {
		t.Fatal(err)
	}
	if acc, err := a.CheckKey(ctx, key); !errors.Is(err, staff.ErrBadLogin) {
		t.Fatalf("the deleted olga's key after olga was created again = %+v, %v; want ErrBadLogin", acc, err)
	}
	second, _ := a.Get(ctx, "olga")
	if second.Gen == "" || second.Gen == first.Gen {
		t.Fatalf("incarnations %q then %q: want a new one", first.Gen, second.Gen)
	}
	if acc, err := a.SignIn(ctx, "olga", "password of olga"); err != nil || acc.Gen != second.Gen {
		t.Fatalf("SignIn = %+v, %v; want incarnation %q", acc, err, second.Gen)
	}

	// A role change: new incarnation, keys gone; the same role changes nothing.
	key, _, _ = a.NewKey(ctx, "olga")
	if _, err := a.SetRole(ctx, "olga", staff.Admin); err != nil {
		t.Fatal(err)
	}
	if same, _ := a.Get(ctx, "olga"); same.Gen != second.Gen || len(same.Keys) != 1 {
		t.Fatalf("after setting the same role: %+v, want incarnation %q and its key", same, second.Gen)
	}
	if err := a.Create(ctx, "ada", staff.Admin, pw); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetRole(ctx, "olga", staff.Viewer); err != nil {
		t.Fatal(err)
	}
	third, _ := a.Get(ctx, "olga")
	if third.Gen == second.Gen || len(third.Keys) != 0 {
		t.Fatalf("after a role change: %+v", third)
	}
	if _, err := a.CheckKey(ctx, key); !errors.Is(err, staff.ErrBadLogin) {
		t.Fatalf("a key after a role change = %v", err)
	}

	// A password change: only for the incarnation the caller knows.
	key, _, _ = a.NewKey(ctx, "olga")
	if _, err := a.ChangePassword(ctx, "olga", password(t, "a new password"), second.Gen); !errors.Is(err, staff.ErrStale) {
		t.Fatalf("a change for an old incarnation = %v, want ErrStale", err)
	}
	gen, err := a.ChangePassword(ctx, "olga", password(t, "a new password"), third.Gen)
	if err != nil {
		t.Fatal(err)
	}
	if fourth, _ := a.Get(ctx, "olga"); fourth.Gen != gen || gen == third.Gen || len(fourth.Keys) != 0 {
		t.Fatalf("after a password change: %+v, new incarnation %q", fourth, gen)
	}
	if _, err := a.CheckKey(ctx, key); !errors.Is(err, staff.ErrBadLogin) {
		t.Fatalf("a key after a password change = %v", err)
	}
	if _, err := a.SignIn(ctx, "olga", "password of olga"); !errors.Is(err, staff.ErrBadLogin) {
		t.Fatalf("the old password = %v", err)
	}
	if err := a.ResetPassword(ctx, "olga", password(t, "reset by an admin")); err != nil {
		t.Fatal(err)
	}
	if acc, err := a.SignIn(ctx, "olga", "reset by an admin"); err != nil || acc.Gen == gen {
		t.Fatalf("after a reset: %+v, %v", acc, err)
	}
	if err := a.ResetPassword(ctx, "nobody", pw); !errors.Is(err, staff.ErrNotFound) {
		t.Fatalf("reset of no account = %v", err)
	}
}
