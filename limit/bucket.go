package limit

import (
	"math"
	"time"
)

// Bucket is one token bucket with the arithmetic of bucket.lua: the state
// Local keeps per key, for a caller that keeps a key's bucket beside its
// own data instead (the edge's ticket cache keeps each ticket's status-poll
// budget in the ticket's entry, so that a poll looks its ticket up once).
// The zero value is full. A Bucket is not safe for concurrent use: its
// keeper guards it.
type Bucket struct {
	tokens float64
	last   time.Time // zero: never spent, full
	limit  Limit     // the shape of the last Take, for Full
}

// Take spends one token, shaped lim, at now: whether the token was there,
// the tokens left, and, when refused, how long until one is. An unlimited
// lim always allows and changes nothing.
func (b *Bucket) Take(lim Limit, now time.Time) (ok bool, left float64, retry time.Duration) {
	if lim.Unlimited() {
		return true, math.Inf(1), 0
	}
	if b.last.IsZero() {
		*b = Bucket{tokens: lim.burst(), last: now}
	}
	return b.take(lim, now)
}

// Full reports whether the bucket holds its whole burst at now: dropping a
// full bucket changes no decision.
func (b *Bucket) Full(now time.Time) bool {
	return b.last.IsZero() || b.level(now) >= b.limit.burst()
}

// take spends one token of a started bucket (see Take).
func (b *Bucket) take(lim Limit, now time.Time) (ok bool, left float64, retry time.Duration) {
	b.limit = lim
	tokens := b.level(now)
	if now.After(b.last) {
		b.last = now
	}
	if tokens < 1 {
		b.tokens = tokens
		need := time.Duration(math.Ceil((1 - tokens) * 1000 / lim.Rate))
		return false, tokens, need * time.Millisecond
	}
	b.tokens = tokens - 1
	return true, b.tokens, 0
}

// level is the bucket's tokens at now, refilled and capped by its limit.
func (b *Bucket) level(now time.Time) float64 {
	t := b.tokens
	if d := now.Sub(b.last); d > 0 {
		t += d.Seconds() * b.limit.Rate
	}
	return min(t, b.limit.burst())
}
