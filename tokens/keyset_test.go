package tokens

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

func openTestKeys(t testing.TB, dir string) *KeySet {
	t.Helper()
	k, err := OpenKeyDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestOpenKeyDirCreatesFirstKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	k := openTestKeys(t, dir)
	kid := k.Active()
	if got, want := len(kid), 43; got != want {
		t.Fatalf("kid %q: got length %d, want %d", kid, got, want)
	}
	if got, want := k.Kids(), []string{kid}; !slices.Equal(got, want) {
		t.Errorf("Kids: got %v, want %v", got, want)
	}
	for name, want := range map[string]os.FileMode{kid + ".pem": 0o600, "active": 0o600} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != want {
			t.Errorf("%s mode: got %v, want %v", name, got, want)
		}
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode: got %v, want 0700", st.Mode().Perm())
	}
	if got := k.snap.Load().signer.Public().(ed25519.PublicKey); thumbprint(got) != kid {
		t.Errorf("kid: got %s, want the thumbprint %s", kid, thumbprint(got))
	}
	if got := openTestKeys(t, dir).Active(); got != kid {
		t.Errorf("reopen: got active %s, want %s", got, kid)
	}
}

func TestOpenKeyDirConcurrentFirstStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	const n = 8
	actives := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, err := OpenKeyDir(dir)
			if err == nil {
				actives[i] = k.Active()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("node %d: %v", i, errs[i])
		}
		if actives[i] != actives[0] {
			t.Errorf("node %d: got active %s, want %s (one signer for all)", i, actives[i], actives[0])
		}
	}
}

func TestOpenKeyDirRejectsInconsistentDir(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(dir, kid string) error
	}{
		{"key renamed", func(dir, kid string) error {
			return os.Rename(filepath.Join(dir, kid+".pem"), filepath.Join(dir, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.pem"))
		}},
		{"key not PEM", func(dir, kid string) error {
			return os.WriteFile(filepath.Join(dir, kid+".pem"), []byte("garbage"), 0o600)
		}},
		{"active names a missing key", func(dir, kid string) error {
			return os.WriteFile(filepath.Join(dir, "active"), []byte("nope\n"), 0o600)
		}},
		{"bad inactive stamp", func(dir, kid string) error {
			return os.WriteFile(filepath.Join(dir, kid+".inactive"), []byte("yesterday"), 0o600)
		}},
	} {
		dir := t.TempDir()
		k := openTestKeys(t, dir)
		if err := tc.spoil(dir, k.Active()); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenKeyDir(dir); err == nil {
			t.Errorf("%s: OpenKeyDir got no error, want one", tc.name)
		}
		before := k.Active()
		if err := k.Reload(); err == nil {
			t.Errorf("%s: Reload got no error, want one", tc.name)
		}
		if got := k.Active(); got != before {
			t.Errorf("%s: after failed Reload got active %s, want the previous %s", tc.name, got, before)
		}
	}
}

func TestRotateRetire(t *testing.T) {
	dir := t.TempDir()
	keys := openTestKeys(t, dir)
	iss := NewIssuer(keys, IssuerConfig{})
	ttl := 10 * time.Minute
	oldKid := keys.Active()
	oldTok, _, err := iss.Issue("ev", "alice", 1, ttl, t0())
	if err != nil {
		t.Fatal(err)
	}
	rotatedAt := t0().Add(time.Minute)
	newKid, err := keys.Rotate(rotatedAt)
	if err != nil {
		t.Fatal(err)
	}
	if newKid == oldKid || keys.Active() != newKid {
		t.Fatalf("Rotate: got active %s (returned %s), want a new kid other than %s", keys.Active(), newKid, oldKid)
	}
	if got, want := keys.Kids(), []string{newKid, oldKid}; !slices.Equal(got, want) {
		t.Errorf("Kids after Rotate: got %v, want %v", got, want)
	}
	newTok, _, err := iss.Issue("ev", "bob", 2, ttl, rotatedAt)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when time.Time, raw string, want error) {
		t.Helper()
		_, err := iss.Verify(raw, "ev", when)
		checkErr(t, err, want)
	}
	check(rotatedAt, oldTok, nil) // signed before rotation, verifies after
	check(rotatedAt, newTok, nil)

	for _, tc := range []struct {
		at          time.Time
		wantRemoved []string
	}{
		{rotatedAt.Add(ttl), nil}, // exactly maxTokenAge: kept
		{rotatedAt.Add(ttl + time.Second), []string{oldKid}},
		{rotatedAt.Add(2 * ttl), nil},
	} {
		got, err := keys.Retire(tc.at, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.wantRemoved) {
			t.Errorf("Retire(%v): got %v, want %v", tc.at.Sub(rotatedAt), got, tc.wantRemoved)
		}
	}
	if got, want := keys.Kids(), []string{newKid}; !slices.Equal(got, want) {
		t.Errorf("Kids after Retire: got %v, want %v", got, want)
	}
	for _, name := range []string{oldKid + ".pem", oldKid + ".inactive"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Retire: got %v, want it removed", name, err)
		}
	}
	// The old token is still within its own lifetime here, but its key is gone.
	check(rotatedAt, oldTok, ErrInvalid)
	check(rotatedAt, newTok, nil)
}

func TestRetireStampsUnrecordedKey(t *testing.T) {
	dir := t.TempDir()
	keys := openTestKeys(t, dir)
	orphan, err := generateKey(dir) // as if a rotation crashed before switching
	if err != nil {
		t.Fatal(err)
	}
	age := time.Hour
	if got, err := keys.Retire(t0(), age); err != nil || len(got) != 0 {
		t.Fatalf("first Retire: got %v, %v, want nothing removed", got, err)
	}
	if !slices.Contains(keys.Kids(), orphan) {
		t.Errorf("Kids: got %v, want the orphan %s kept", keys.Kids(), orphan)
	}
	if got, err := keys.Retire(t0().Add(age), age); err != nil || len(got) != 0 {
		t.Fatalf("Retire at the limit: got %v, %v, want nothing removed", got, err)
	}
	got, err := keys.Retire(t0().Add(age+time.Nanosecond), age)
	if err != nil || !slices.Equal(got, []string{orphan}) {
		t.Errorf("Retire past the limit: got %v, %v, want [%s]", got, err, orphan)
	}
	if _, err := keys.Retire(t0(), 0); err == nil {
		t.Errorf("Retire with maxTokenAge 0: got no error, want one")
	}
}

func TestReloadSeesOtherNodesRotation(t *testing.T) {
	dir := t.TempDir()
	a, b := openTestKeys(t, dir), openTestKeys(t, dir)
	issA, issB := NewIssuer(a, IssuerConfig{}), NewIssuer(b, IssuerConfig{})
	if a.Active() != b.Active() {
		t.Fatalf("two nodes: got actives %s and %s, want one", a.Active(), b.Active())
	}
	kid, err := a.Rotate(t0())
	if err != nil {
		t.Fatal(err)
	}
	tokA, _, err := issA.Issue("ev", "u", 1, time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := issB.Verify(tokA, "ev", t0()); !errors.Is(err, ErrInvalid) {
		t.Errorf("B before Reload: got %v, want ErrInvalid (unknown kid)", err)
	}
	if err := b.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := b.Active(); got != kid {
		t.Errorf("B after Reload: got active %s, want %s", got, kid)
	}
	if _, err := issB.Verify(tokA, "ev", t0()); err != nil {
		t.Errorf("B after Reload: got %v, want success", err)
	}
	tokB, _, _ := issB.Issue("ev", "u", 1, time.Minute, t0())
	if _, err := issA.Verify(tokB, "ev", t0()); err != nil {
		t.Errorf("A verifying B's new token: got %v, want success", err)
	}
}

func TestJWKS(t *testing.T) {
	keys := openTestKeys(t, t.TempDir())
	if _, err := keys.Rotate(t0()); err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(keys.JWKS(), &set); err != nil {
		t.Fatal(err)
	}
	if got, want := len(set.Keys), 2; got != want {
		t.Fatalf("JWKS keys: got %d, want %d", got, want)
	}
	snap := keys.snap.Load()
	for i, jwk := range set.Keys {
		kid := keys.Kids()[i]
		want := map[string]string{
			"kty": "OKP", "crv": "Ed25519", "x": b64(snap.pubs[kid]),
			"kid": kid, "alg": "EdDSA", "use": "sig",
		}
		if len(jwk) != len(want) {
			t.Errorf("key %d: got members %v, want exactly %v", i, jwk, want)
		}
		for m, v := range want {
			if jwk[m] != v {
				t.Errorf("key %d member %s: got %q, want %q", i, m, jwk[m], v)
			}
		}
	}
	j := keys.JWKS()
	j[0] = 'X'
	if keys.JWKS()[0] != '{' {
		t.Errorf("JWKS: modifying the returned slice changed the key set")
	}
}
