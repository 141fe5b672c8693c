package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/push"
)

// TestKeysVAPID: `anteroom keys vapid -out FILE` writes a VAPID private
// key readable by its owner only, which a node's push service accepts, and
// prints its public key; it never overwrites a file, and -out is required.
func TestKeysVAPID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vapid.key")
	var out, errOut bytes.Buffer
	getenv := func(string) string { return "" }
	if err := run(context.Background(), []string{"keys", "vapid", "-out", path}, getenv, &out, &errOut); err != nil {
		t.Fatalf("keys vapid: %v (%s)", err, errOut.String())
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, st.Mode())
	}
	key, _ := os.ReadFile(path)
	svc, err := push.New(nil, push.Config{PrivateKey: string(key), Subject: "mailto:ops@shop.example"})
	if err != nil {
		t.Fatalf("the written key: %v", err)
	}
	if !strings.Contains(out.String(), svc.PublicKey()) {
		t.Errorf("printed %q, want the public key %s", out.String(), svc.PublicKey())
	}
	if err := run(context.Background(), []string{"keys", "vapid", "-out", path}, getenv, &out, &errOut); err == nil {
		t.Error("keys vapid over an existing file: no error")
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, key) {
		t.Error("keys vapid overwrote the key file")
	}
	if err := run(context.Background(), []string{"keys", "vapid"}, getenv, &out, &errOut); err == nil {
		t.Error("keys vapid without -out: no error")
	}
}
