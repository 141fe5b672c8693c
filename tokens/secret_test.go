package tokens

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestLoadOrCreateSecretCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "ticket.secret")
	first, err := LoadOrCreateSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(first), 32; got != want {
		t.Errorf("secret length: got %d, want %d", got, want)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("secret mode: got %v, want %v", got, want)
	}
	dst, _ := os.Stat(filepath.Dir(path))
	if got, want := dst.Mode().Perm(), os.FileMode(0o700); got != want {
		t.Errorf("directory mode: got %v, want %v", got, want)
	}
	again, err := LoadOrCreateSecret(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, again) {
		t.Errorf("second load: got %x, want %x", again, first)
	}
}

func TestLoadOrCreateSecretReads(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		wantLen       int // 0 means an error is expected
	}{
		{"hex with newline", "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", 32},
		{"upper-case hex, spaces", "  00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF00112233  ", 36},
		{"too short", "00112233", 0},
		{"not hex", "this is not a hex secret at all, it is prose ......", 0},
		{"odd digits", "0011223344556677889900112233445566778899001122334455667788990011a", 0},
		{"empty", "", 0},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadOrCreateSecret(path)
		if tc.wantLen == 0 {
			if err == nil {
				t.Errorf("%s: got %x, want an error", tc.name, got)
			}
			continue
		}
		if err != nil || len(got) != tc.wantLen {
			t.Errorf("%s: got %d bytes, err %v, want %d bytes", tc.name, len(got), err, tc.wantLen)
		}
	}
}

func TestLoadOrCreateSecretConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s", "secret")
	const n = 16
	secrets := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { secrets[i], errs[i] = LoadOrCreateSecret(path) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if !bytes.Equal(secrets[i], secrets[0]) {
			t.Errorf("caller %d: got %x, want %x (one secret for all)", i, secrets[i], secrets[0])
		}
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), tempPrefix+"*"))
	if len(left) != 0 {
		t.Errorf("temp files left: got %v, want none", left)
	}
}
