package client

import (
	"testing"
	"time"
)

func TestRetryNext(t *testing.T) {
	r := Retry{Attempts: 4, MaxWait: 10 * time.Second, NoHeaderWait: time.Second, NetworkWait: 100 * time.Millisecond, Jitter: 0.2}
	for _, c := range []struct {
		name  string
		a     Attempt
		retry bool
		least time.Duration // the wait is in [least, least*1.2]
	}{
		{"429 after Retry-After", Attempt{N: 1, Status: 429, RetryAfter: 3 * time.Second, HasRetryAfter: true}, true, 3 * time.Second},
		{"503 after Retry-After", Attempt{N: 2, Status: 503, RetryAfter: 5 * time.Second, HasRetryAfter: true}, true, 5 * time.Second},
		{"503 Retry-After 0", Attempt{N: 1, Status: 503, HasRetryAfter: true}, true, 0},
		{"429 without Retry-After", Attempt{N: 1, Status: 429}, true, time.Second},
		{"Retry-After over MaxWait: never sooner, so not at all", Attempt{N: 1, Status: 429, RetryAfter: 11 * time.Second, HasRetryAfter: true}, false, 0},
		{"attempts spent", Attempt{N: 4, Status: 503, RetryAfter: time.Second, HasRetryAfter: true}, false, 0},
		{"no answer, replayable", Attempt{N: 1, Replayable: true}, true, 100 * time.Millisecond},
		{"no answer, replayable, third time doubles twice", Attempt{N: 3, Replayable: true}, true, 400 * time.Millisecond},
		{"no answer, not replayable", Attempt{N: 1}, false, 0},
		{"502 replayable", Attempt{N: 1, Status: 502, Replayable: true}, true, 100 * time.Millisecond},
		{"504 not replayable", Attempt{N: 1, Status: 504}, false, 0},
		{"500", Attempt{N: 1, Status: 500, Replayable: true}, false, 0},
		{"409", Attempt{N: 1, Status: 409, Replayable: true}, false, 0},
		{"403 not_open", Attempt{N: 1, Status: 403, Replayable: true, RetryAfter: time.Second, HasRetryAfter: true}, false, 0},
		{"401", Attempt{N: 1, Status: 401, Replayable: true}, false, 0},
		{"410", Attempt{N: 1, Status: 410, Replayable: true}, false, 0},
	} {
		for range 50 { // the jitter is random: it must never break the bounds
			wait, retry := r.Next(c.a)
			if retry != c.retry {
				t.Fatalf("%s: retry %v, want %v", c.name, retry, c.retry)
			}
			if retry && (wait < c.least || wait > c.least+c.least/5) {
				t.Fatalf("%s: wait %v, want %v to %v", c.name, wait, c.least, c.least+c.least/5)
			}
		}
	}
}

func TestRetryNetworkWaitCapped(t *testing.T) {
	r := Retry{Attempts: 100, MaxWait: time.Second, NetworkWait: 100 * time.Millisecond, Jitter: 0.2}
	for n := 1; n < 100; n++ {
		wait, ok := r.Next(Attempt{N: n, Replayable: true})
		if !ok || wait > 1200*time.Millisecond {
			t.Fatalf("attempt %d: wait %v, %v; want a retry within MaxWait plus jitter", n, wait, ok)
		}
	}
}

func TestRetryDefaults(t *testing.T) {
	var r Retry
	if _, ok := r.Next(Attempt{N: 4, Status: 503}); !ok {
		t.Error("the default retried fewer than 5 times")
	}
	if _, ok := r.Next(Attempt{N: 5, Status: 503}); ok {
		t.Error("the default retried more than 5 times")
	}
	if w, ok := r.Next(Attempt{N: 1, Status: 503, RetryAfter: 60 * time.Second, HasRetryAfter: true}); !ok || w < 60*time.Second {
		t.Errorf("a closed room's Retry-After 60: %v %v, want a retry after 60s", w, ok)
	}
}

func TestPollDelay(t *testing.T) {
	for range 100 {
		if d := PollDelay(2500 * time.Millisecond); d < 2500*time.Millisecond || d > 2750*time.Millisecond {
			t.Fatalf("PollDelay(2.5s) = %v", d)
		}
		if d := PollDelay(0); d < time.Second || d > 1100*time.Millisecond {
			t.Fatalf("PollDelay(0) = %v, want about the 1 s floor", d)
		}
	}
}
