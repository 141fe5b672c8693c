package wait

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if !Sleep(ctx, time.Millisecond) {
		t.Error("Sleep(live ctx, 1ms) = false, want true")
	}
	if !Sleep(ctx, 0) {
		t.Error("Sleep(live ctx, 0) = false, want true")
	}
	cancel()
	start := time.Now()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep(done ctx, 1h) = true, want false")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Sleep(done ctx, 1h) took %s, want at once", took)
	}
	if Sleep(ctx, 0) {
		t.Error("Sleep(done ctx, 0) = true, want false")
	}
}

func TestUntil(t *testing.T) {
	notYet := errors.New("not yet")
	calls := 0
	err := Until(time.Minute, time.Millisecond, func() error {
		if calls++; calls < 3 {
			return notYet
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("Until = %v after %d calls, want nil after 3", err, calls)
	}

	calls = 0
	err = Until(0, time.Millisecond, func() error { calls++; return notYet })
	if !errors.Is(err, notYet) || calls != 1 {
		t.Errorf("Until(timeout 0) = %v after %d calls, want the condition's error after 1", err, calls)
	}

	calls = 0
	err = Until(20*time.Millisecond, time.Millisecond, func() error { calls++; return fmt.Errorf("try %d: %w", calls, notYet) })
	if !errors.Is(err, notYet) || calls < 2 || err.Error() != fmt.Sprintf("try %d: not yet", calls) {
		t.Errorf("Until(20ms) = %v after %d calls, want the last call's error", err, calls)
	}

	calls = 0
	exited := errors.New("exited")
	err = Until(time.Minute, time.Millisecond, func() error { calls++; return Stop(fmt.Errorf("server: %w", exited)) })
	if !errors.Is(err, exited) || err.Error() != "server: exited" || calls != 1 {
		t.Errorf("Until(Stop) = %v after %d calls, want the stopping error, as it reads, after 1", err, calls)
	}
}
