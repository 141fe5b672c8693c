package staff_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/staff"
)

func TestAccountsOnRedis(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx := context.Background()
	a := staff.NewAccounts(rdb)
	if has, err := a.HasAdmin(ctx); err != nil || has {
		t.Fatalf("HasAdmin on an empty store = %v, %v", has, err)
	}
	if err := a.Create(ctx, "ada", staff.Admin, password(t, "correct horse battery")); err != nil {
		t.Fatal(err)
	}
	if err := a.Create(ctx, "ada", staff.Viewer, password(t, "another password")); !errors.Is(err, staff.ErrExists) {
		t.Fatalf("second create = %v, want ErrExists", err)
	}
	if _, err := staff.HashPassword("short"); err == nil {
		t.Fatal("a short password was accepted")
	}
	if has, _ := a.HasAdmin(ctx); !has {
		t.Fatal("HasAdmin false after an admin was created")
	}
	// The password is stored as an argon2id hash, never in clear.
	stored, _ := rdb.HGet(ctx, "ar:{staff}:account:ada", "password").Result()
	if !strings.HasPrefix(stored, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(stored, "horse") {
		t.Fatalf("stored password %q", stored)
	}
	if _, err := a.SignIn(ctx, "ada", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][2]string{{"ada", "correct horse batterY"}, {"nobody", "correct horse battery"}, {"ADA!", "x"}} {
		if _, err := a.SignIn(ctx, bad[0], bad[1]); !errors.Is(err, staff.ErrBadLogin) {
			t.Fatalf("SignIn(%q) = %v, want ErrBadLogin", bad[0], err)
		}
	}
	// The last admin is neither demoted nor removed.
	if _, err := a.SetRole(ctx, "ada", staff.Viewer); !errors.Is(err, staff.ErrLastAdmin) {
		t.Fatalf("demoting the last admin = %v", err)
	}
	if _, err := a.Delete(ctx, "ada"); !errors.Is(err, staff.ErrLastAdmin) {
		t.Fatalf("deleting the last admin = %v", err)
	}
	// API keys: shown once, kept as SHA-256, revocable, gone with the account.
	if err := a.Create(ctx, "bot", staff.Operator, password(t, "automation password")); err != nil {
		t.Fatal(err)
	}
	key, prefix, err := a.NewKey(ctx, "bot")
	if err != nil {
		t.Fatal(err)
	}
	if acc, err := a.CheckKey(ctx, key); err != nil || acc.Name != "bot" || acc.Role != staff.Operator {
		t.Fatalf("CheckKey = %+v, %v", acc, err)
	}
	if h, _ := rdb.HGetAll(ctx, "ar:{staff}:apikey:"+prefix).Result(); strings.Contains(h["sha256"], key) || len(h["sha256"]) != 64 {
		t.Fatalf("stored key %v", h)
	}
	if _, err := a.CheckKey(ctx, key[:len(key)-1]+"x"); !errors.Is(err, staff.ErrBadLogin) {
		t.Fatalf("a tampered key = %v", err)
	}
	if owner, err := a.RevokeKey(ctx, prefix); err != nil || owner != "bot" {
		t.Fatalf("RevokeKey = %q, %v", owner, err)
	}
	if _, err := a.CheckKey(ctx, key); !errors.Is(err, staff.ErrBadLogin) {
		t.Fatalf("a revoked key = %v", err)
	}
	key2, _, _ := a.NewKey(ctx, "bot")
	if _, err := a.Delete(ctx, "bot"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CheckKey(ctx, key2); !errors.Is(err, staff.ErrBadLogin) {
		t.Fatalf("a key of a deleted account = %v", err)
	}
	if list, _ := a.List(ctx); len(list) != 1 || list[0].Name != "ada" {
		t.Fatalf("List = %+v", list)
	}
}

func TestAuditOnRedis(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	ctx := context.Background()
	au := staff.NewAudit(rdb)
	before := time.Now().Add(-time.Minute)
	for _, e := range []staff.Entry{
		{Who: "ada", Role: "admin", Action: "event.update", Event: "a", Before: []byte(`{"supply":1}`), After: []byte(`{"supply":2}`)},
		{Who: "op", Role: "operator", Action: "event.pause", Event: "b"},
		{Who: "op", Role: "operator", Action: "event.resume", Event: "a"},
	} {
		if err := au.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := au.List(ctx, staff.Query{})
	if err != nil || len(all) != 3 || all[0].Action != "event.resume" || all[2].Action != "event.update" {
		t.Fatalf("List = %+v, %v", all, err)
	}
	if all[2].When.Before(before) || string(all[2].After) != `{"supply":2}` {
		t.Fatalf("entry %+v", all[2])
	}
	if a, _ := au.List(ctx, staff.Query{Event: "a"}); len(a) != 2 {
		t.Fatalf("event a: %+v", a)
	}
	if none, _ := au.List(ctx, staff.Query{Since: time.Now().Add(time.Hour)}); len(none) != 0 {
		t.Fatalf("since the future: %+v", none)
	}
	// A fact every node observes is recorded once.
	for range 3 {
		if _, err := au.RecordOnce(ctx, "keys:abc", staff.Entry{Who: "key directory", Action: "keys.rotate"}); err != nil {
			t.Fatal(err)
		}
	}
	if rot, _ := au.List(ctx, staff.Query{}); len(rot) != 4 || rot[0].Action != "keys.rotate" || rot[1].Action == "keys.rotate" {
		t.Fatalf("after RecordOnce ×3: %+v", rot)
	}
}

// password hashes p for Accounts.Create.
func password(t *testing.T, p string) staff.Password {
	t.Helper()
	pw, err := staff.HashPassword(p)
	if err != nil {
		t.Fatal(err)
	}
	return pw
}

// TestSignInSlowHash: on a busy machine checking a password takes
// seconds, as long as a request's whole deadline for Redis. The sign-in
// must not need Redis after the check: here the deadline passes during the
// check (half the time one hash took on this machine just before).
func TestSignInSlowHash(t *testing.T) {
	rdb := testenv.StartRedis(t).Client(t)
	a := staff.NewAccounts(rdb)
	start := time.Now()
	pw := password(t, "correct horse battery")
	hash := time.Since(start)
	if err := a.Create(context.Background(), "ada", staff.Admin, pw); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hash/2)
	defer cancel()
	acc, err := a.SignIn(ctx, "ada", "correct horse battery")
	if err != nil || acc.Name != "ada" || acc.Role != staff.Admin {
		t.Fatalf("SignIn with the deadline passing during the password check = %+v, %v; want ada, admin", acc, err)
	}
}
