package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/tokens"
)

// TestKeyRotationSeenHalfway: `anteroom keys rotate` writes the new key
// before it makes it active, and a node that reloads in between sees the
// new key published and not signing. That is a publication, not a
// retirement, and the rotation is then recorded from there.
func TestKeyRotationSeenHalfway(t *testing.T) {
	r := testenv.StartRedis(t)
	audit := staff.NewAudit(r.Client(t))
	ctx := context.Background()
	dir, elsewhere := t.TempDir(), t.TempDir()
	ks, err := tokens.OpenKeyDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := newKeyWatch(audit, ks)
	if err := w.observe(ctx); err != nil {
		t.Fatal(err)
	}
	// The halfway state: another key's file in the directory, not active.
	other, err := tokens.OpenKeyDir(elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(filepath.Join(elsewhere, other.Active()+".pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, other.Active()+".pem"), pem, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ks.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := w.observe(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Rotate(time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := w.observe(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := audit.List(ctx, staff.Query{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := len(all) - 1; i >= 0; i-- { // oldest first
		got = append(got, all[i].Action)
	}
	want := []string{"keys.observed", "keys.publish", "keys.rotate"}
	if len(got) != len(want) {
		t.Fatalf("audit %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("audit %v, want %v", got, want)
		}
	}
}
