package tokens

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRotationStages walks a key through next, active and retiring, with
// the refusals an operator meets on the way; each refusal changes nothing.
func TestRotationStages(t *testing.T) {
	dir := t.TempDir()
	k := openTestKeys(t, dir)
	node := openTestKeys(t, dir) // another node sharing the directory
	old := k.Active()
	iss := NewIssuer(node, IssuerConfig{})
	const wait = 5 * time.Minute

	if _, _, err := k.Promote(t0(), wait); !errors.Is(err, ErrNoNext) {
		t.Fatalf("Promote with no next key: %v, want ErrNoNext", err)
	}
	next, err := k.PublishNext(t0())
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := node.Active(); got != old {
		t.Fatalf("after PublishNext the active key is %s, want still %s", got, old)
	}
	if got := node.Kids(); !slices.Contains(got, next) || len(got) != 2 {
		t.Fatalf("after PublishNext the set is %v, want %s and %s", got, old, next)
	}
	if got, want := node.States(), []KeyState{{Kid: old, Stage: StageActive}, {Kid: next, Stage: StageNext, Since: t0()}}; !equalStates(got, want) {
		t.Errorf("States: %v, want %v", got, want)
	}
	raw, _, err := iss.Issue("ev", "u", 1, time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	if got := kidOf(t, raw); got != old {
		t.Errorf("a token signed after PublishNext has kid %s, want the active %s", got, old)
	}
	if _, err := k.PublishNext(t0()); !errors.Is(err, ErrNextPending) {
		t.Errorf("a second PublishNext: %v, want ErrNextPending", err)
	}
	// Retire never removes the next key, however old.
	if removed, err := k.Retire(t0().Add(24*time.Hour), time.Millisecond); err != nil || len(removed) != 0 {
		t.Errorf("Retire with a next key: removed %v, %v; want nothing", removed, err)
	}

	_, _, err = k.Promote(t0().Add(wait-time.Second), wait)
	if !errors.Is(err, ErrTooSoon) || !strings.Contains(err.Error(), "time left 1s") {
		t.Fatalf("Promote 1s early: %v, want ErrTooSoon naming 1s left", err)
	}
	if got := k.Active(); got != old {
		t.Fatalf("a refused Promote changed the signer to %s", got)
	}
	promoted := t0().Add(wait)
	kid, prev, err := k.Promote(promoted, wait)
	if err != nil || kid != next || prev != old {
		t.Fatalf("Promote: %s, %s, %v; want %s, %s", kid, prev, err, next, old)
	}
	if err := node.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, want := node.States(), []KeyState{{Kid: next, Stage: StageActive}, {Kid: old, Stage: StageRetiring, Since: promoted}}; !equalStates(got, want) {
		t.Errorf("States after Promote: %v, want %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, nextFile)); !os.IsNotExist(err) {
		t.Errorf("next file after Promote: %v, want it gone", err)
	}
	if _, err := iss.Verify(raw, "ev", promoted.Add(-wait)); err != nil {
		t.Errorf("a token of the retiring key: %v", err)
	}
	raw2, _, err := iss.Issue("ev", "u", 2, time.Minute, promoted)
	if err != nil {
		t.Fatal(err)
	}
	if got := kidOf(t, raw2); got != next {
		t.Errorf("a token signed after Promote has kid %s, want %s", got, next)
	}
	removed, err := k.Retire(promoted.Add(time.Hour), 30*time.Minute)
	if err != nil || !slices.Equal(removed, []string{old}) {
		t.Fatalf("Retire: %v, %v; want %s", removed, err, old)
	}
}

// TestPublishNextConcurrent: two operators staging a key at once get one
// next key between them, and no stray key file.
func TestPublishNextConcurrent(t *testing.T) {
	dir := t.TempDir()
	openTestKeys(t, dir)
	const n = 6
	kids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := OpenKeyDir(dir)
			if err != nil {
				errs[i] = err
				return
			}
			kids[i], errs[i] = k.PublishNext(t0())
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrNextPending):
			t.Errorf("PublishNext %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d PublishNext succeeded, want 1 (errors %v)", won, errs)
	}
	if got := openTestKeys(t, dir).Kids(); len(got) != 2 {
		t.Errorf("keys after concurrent PublishNext: %v, want the active and one next", got)
	}
}

// TestPromoteCrashLeavesUsableDir: a Promote that stopped after writing
// active (its next file still naming the new signer) leaves a directory
// that opens, has no next key, and takes a new PublishNext.
func TestPromoteCrashLeavesUsableDir(t *testing.T) {
	dir := t.TempDir()
	k := openTestKeys(t, dir)
	next, err := k.PublishNext(t0())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, activeFile), []byte(next+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := k.Reload(); err != nil {
		t.Fatal(err)
	}
	if st := k.States(); st[0].Kid != next || len(st) != 2 || st[1].Stage != StageRetiring {
		t.Fatalf("States after a torn Promote: %v", st)
	}
	if _, err := k.PublishNext(t0()); err != nil {
		t.Fatalf("PublishNext after a torn Promote: %v", err)
	}
}

// TestRotateAtOnce: Rotate is PublishNext and Promote with no wait.
func TestRotateAtOnce(t *testing.T) {
	k := openTestKeys(t, t.TempDir())
	old := k.Active()
	kid, err := k.Rotate(t0())
	if err != nil || kid == old || k.Active() != kid {
		t.Fatalf("Rotate: %s, %v; active %s", kid, err, k.Active())
	}
	next, err := k.PublishNext(t0())
	if err != nil {
		t.Fatal(err)
	}
	if kid, err := k.Rotate(t0()); err != nil || kid != next {
		t.Errorf("Rotate with a next key published: %s, %v; want it to promote %s", kid, err, next)
	}
}

func equalStates(a, b []KeyState) bool {
	return slices.EqualFunc(a, b, func(x, y KeyState) bool {
		return x.Kid == y.Kid && x.Stage == y.Stage && x.Since.Equal(y.Since)
	})
}

// kidOf reads the kid of a token's header.
func kidOf(t testing.TB, raw string) string {
	t.Helper()
	h, _, _ := strings.Cut(raw, ".")
	b, err := unb64(h)
	if err != nil {
		t.Fatal(err)
	}
	var head struct {
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		t.Fatal(err)
	}
	return head.Kid
}
