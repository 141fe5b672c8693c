package client

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry is when and how a call is sent again; the package comment states
// the rules. The zero value is the defaults. A Retry is a plain value,
// safe to share.
type Retry struct {
	// Attempts is how many times one call is sent at most, the first
	// included; 1 turns retries off.
	//
	// Default: 5
	Attempts int
	// MaxWait is the longest the client waits before one retry. When the
	// node's Retry-After asks for longer, the call ends with the node's
	// *Error at once: it never comes back sooner than asked.
	//
	// Default: 60s (a closed room's default Retry-After)
	MaxWait time.Duration
	// NoHeaderWait is the wait after a 429 or 503 without a Retry-After
	// (an answer of a proxy in front of the node).
	//
	// Default: 1s
	NoHeaderWait time.Duration
	// NetworkWait is the first wait after no answer came (a refused or
	// cut connection, a timeout, a 502 or 504 of a proxy); it doubles
	// with each attempt, up to MaxWait.
	//
	// Default: 200ms
	NetworkWait time.Duration
	// Jitter is the fraction of a wait added at random, so callers
	// refused together do not come back together. Only ever added: a
	// wait is never shorter than the node asked.
	//
	// Default: 0.2
	Jitter float64
}

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = 5
	}
	if r.MaxWait <= 0 {
		r.MaxWait = 60 * time.Second
	}
	if r.NoHeaderWait <= 0 {
		r.NoHeaderWait = time.Second
	}
	if r.NetworkWait <= 0 {
		r.NetworkWait = 200 * time.Millisecond
	}
	if r.Jitter <= 0 {
		r.Jitter = 0.2
	}
	return r
}

// Attempt is what one sending of a call came to, for Retry.Next.
type Attempt struct {
	// N is how many times the call has been sent, 1 after the first.
	N int
	// Status is the HTTP status; 0 when no answer came.
	Status int
	// RetryAfter is the answer's Retry-After, HasRetryAfter whether it
	// had one.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Replayable says sending the same request again cannot do anything
	// twice: a GET, a claim (its Idempotency-Key is sent again), a
	// release, a join whose caller is already named (a repeated join of
	// one user returns the same ticket). Only then is a call retried when
	// no answer came, since the first may have been carried out.
	Replayable bool
}

// Next says whether to send the call again after a, and after how long:
//
//   - 429 and 503: after the Retry-After (NoHeaderWait without one), plus
//     jitter; not when that is over MaxWait;
//   - no answer (Status 0), 502 or 504: only when a.Replayable, after
//     NetworkWait doubled per attempt, capped at MaxWait, plus jitter;
//   - anything else (success, any other 4xx or 5xx): never;
//   - never more than Attempts sendings.
func (r Retry) Next(a Attempt) (wait time.Duration, retry bool) {
	r = r.withDefaults()
	if a.N >= r.Attempts {
		return 0, false
	}
	switch {
	case retryable(a.Status):
		wait = r.NoHeaderWait
		if a.HasRetryAfter {
			wait = a.RetryAfter
		}
		if wait > r.MaxWait {
			return 0, false
		}
	case a.Replayable && (a.Status == 0 || a.Status == http.StatusBadGateway || a.Status == http.StatusGatewayTimeout):
		wait = r.NetworkWait << min(max(a.N-1, 0), 16)
		wait = min(wait, r.MaxWait)
	default:
		return 0, false
	}
	return jitter(wait, r.Jitter), true
}

// retryable reports the statuses that ask to try again later.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// jitter adds up to frac of d at random.
func jitter(d time.Duration, frac float64) time.Duration {
	if d <= 0 || frac <= 0 {
		return d
	}
	return d + time.Duration(rand.Float64()*frac*float64(d))
}

// PollDelay is the wait before the next status poll after an answer that
// asked for pollAfter (poll_after_ms): pollAfter plus up to a tenth at
// random, so pollers spread out; never less than pollAfter, and at least
// a second when the answer named no pace.
func PollDelay(pollAfter time.Duration) time.Duration {
	if pollAfter <= 0 {
		pollAfter = time.Second
	}
	return jitter(pollAfter, 0.1)
}

// ParseRetryAfter reads a Retry-After header's value, whole seconds or an
// HTTP-date (RFC 9110), at instant now. ok is false for an empty or
// unreadable value; a date in the past is 0.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, 1<<31)) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
