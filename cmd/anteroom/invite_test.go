package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/tokens"
)

// TestInviteCommand signs with the secret a node would use (flag or data
// dir file) and the nodes accept what it prints for that user and event
// only; it never invents a secret.
func TestInviteCommand(t *testing.T) {
	secretHex := strings.Repeat("ab", 32)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ticket-secret"), []byte(secretHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inv, err := tokens.NewInvites(bytes.Repeat([]byte{0xab}, 32))
	if err != nil {
		t.Fatal(err)
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for name, getenv := range map[string]func(string) string{
		"secret from the environment": env(map[string]string{"ANTEROOM_TICKET_SECRET": secretHex}),
		"secret from the data dir":    env(map[string]string{"ANTEROOM_DATA_DIR": dir}),
	} {
		var out, errOut bytes.Buffer
		if err := run(context.Background(), []string{"invite", "-event", "drop-1", "-user", "alice", "-ttl", "1h"}, getenv, &out, &errOut); err != nil {
			t.Fatalf("%s: %v (%s)", name, err, errOut.String())
		}
		tok := strings.TrimSpace(out.String())
		if err := inv.Verify(tok, "drop-1", "alice", time.Now()); err != nil {
			t.Errorf("%s: printed %q, which does not verify: %v", name, tok, err)
		}
		if inv.Verify(tok, "drop-1", "bob", time.Now()) == nil || inv.Verify(tok, "drop-2", "alice", time.Now()) == nil {
			t.Errorf("%s: the invite also admits another user or event", name)
		}
	}
	empty := t.TempDir()
	err = run(context.Background(), []string{"invite", "-event", "drop-1", "-user", "alice", "-data-dir", empty}, env(nil), &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "no ticket secret") {
		t.Fatalf("without a secret: %v, want an error", err)
	}
	if _, err := os.Stat(filepath.Join(empty, "ticket-secret")); err == nil {
		t.Fatal("invite created a ticket secret")
	}
	if err := run(context.Background(), []string{"invite", "-event", "Bad Id", "-user", "a"}, env(nil), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Fatal("a bad event id was accepted")
	}
}
