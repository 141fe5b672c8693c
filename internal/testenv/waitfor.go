package testenv

import (
	"errors"
	"testing"
	"time"
)

// WaitFor polls cond every 20 ms until it holds, and fails the test when it
// does not hold within d: a test waits for a condition instead of sleeping.
// what names the condition in the failure. Tests of whole nodes use
// nodetest.WaitFor, which adds patience for a loaded machine.
func WaitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	start := time.Now()
	if poll(d, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}) != nil {
		t.Fatalf("timed out after %s waiting for %s", time.Since(start).Round(time.Millisecond), what)
	}
}

// Eventually polls f every 20 ms until it returns nil, and fails the test
// with f's last error when it still fails after d. what names the
// condition in the failure.
func Eventually(t testing.TB, what string, d time.Duration, f func() error) {
	t.Helper()
	if err := poll(d, f); err != nil {
		t.Fatalf("%s: still failing after %v: %v", what, d, err)
	}
}

// errNotYet is WaitFor's condition's error while it does not hold.
var errNotYet = errors.New("not yet")
