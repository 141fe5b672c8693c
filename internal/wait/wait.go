// Package wait is how anteroom's loops wait without sleeping blindly:
// Sleep, a pause that the caller's context cuts short, and Until, which
// polls a condition to a deadline instead of sleeping a fixed time (a
// fixed sleep is too short on a loaded machine and too long on an idle
// one).
//
// It imports no testing package: the load generator and the bench
// harness use it as the tests and their helpers (internal/testenv,
// internal/nodetest) do. Its functions are safe for concurrent use.
package wait

import (
	"context"
	"errors"
	"time"
)

// Sleep waits d or until ctx ends, and reports whether d passed (false:
// ctx ended first). A d of 0 or less does not wait: it reports whether
// ctx is still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Stop marks err, returned by a condition, as final: Until returns it at
// once, as waiting longer cannot help (the process waited for has exited,
// the run was cancelled). The result reads as err and unwraps to it.
func Stop(err error) error { return stopError{err} }

type stopError struct{ err error }

func (s stopError) Error() string { return s.err.Error() }
func (s stopError) Unwrap() error { return s.err }

// Until calls cond, then again every interval, until it returns nil, an
// error made by Stop, or timeout has passed since the first call. It
// returns nil when cond held, else cond's last error. cond is called at
// least once, even with a timeout of 0.
func Until(timeout, interval time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if errors.As(err, new(stopError)) || time.Now().After(deadline) {
			return err
		}
		<-tick.C
	}
}
