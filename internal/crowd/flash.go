package crowd

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/internal/wait"
)

// maxTail is how many seconds after the last arrival an open-loop run
// keeps its per-second account; later seconds count in the last one.
const maxTail = 3600

// Second is one second of an open-loop run, as the generator saw it.
type Second struct {
	// Offered counts the joins scheduled in this second (first attempts,
	// by their instant); Sent the join requests sent in it (first
	// attempts and retries); LateOffered the first attempts sent in it
	// more than LateAfter after their instant.
	Offered, Sent, LateOffered int64
	// Answered counts the join answers received in this second: OK (200),
	// Limited (429), Unavailable (503), Other statuses; Failed counts the
	// join requests that got no answer (a timeout, a refused or cut
	// connection) in it.
	Answered, OK, Limited, Unavailable, Other, Failed int64
	// Join is the client's join latency of the answers received in it.
	Join Latency
	// Polls counts status answers, Claims claims granted in it.
	Polls, Claims int64
}

// second is Second while the run counts.
type second struct {
	offered, sent, lateOffered                        atomic.Int64
	answered, ok, limited, unavailable, other, failed atomic.Int64
	polls, claims                                     atomic.Int64
	join                                              hist
}

// at is the account of the second t falls in (the last one beyond it).
func (h *holdRun) at(t time.Time) *second {
	i := int(t.Sub(h.start) / time.Second)
	return &h.seconds[min(max(i, 0), len(h.seconds)-1)]
}

// secondsSoFar is the per-second account up to the current second.
func (h *holdRun) secondsSoFar() []Second {
	if h.seconds == nil {
		return nil
	}
	n := min(int(time.Since(h.start)/time.Second)+1, len(h.seconds))
	for i := n; i < len(h.seconds); i++ { // scheduled but never reached
		if h.seconds[i].offered.Load() > 0 {
			n = i + 1
		}
	}
	out := make([]Second, n)
	for i := range out {
		s := &h.seconds[i]
		out[i] = Second{Offered: s.offered.Load(), Sent: s.sent.Load(), LateOffered: s.lateOffered.Load(),
			Answered: s.answered.Load(), OK: s.ok.Load(), Limited: s.limited.Load(), Unavailable: s.unavailable.Load(),
			Other: s.other.Load(), Failed: s.failed.Load(), Join: s.join.summary(), Polls: s.polls.Load(), Claims: s.claims.Load()}
	}
	return out
}

// offerAll offers every person's join at their instant of Arrivals: one
// dispatcher walks the schedule and hands each due join to the first free
// of Joiners, so a slow answer delays no later arrival unless every
// joiner is busy (then the join is sent late and counted so).
func (h *holdRun) offerAll(ctx context.Context) {
	for _, a := range h.cfg.Arrivals {
		h.seconds[min(int(a/time.Second), len(h.seconds)-1)].offered.Add(1)
	}
	next, done := make(chan uint32, h.cfg.Joiners), make(chan struct{})
	for range h.cfg.Joiners {
		go func() {
			defer func() { done <- struct{}{} }()
			for id := range next {
				now := time.Now()
				h.offered.Add(1)
				if now.Sub(h.start)-h.cfg.Arrivals[id] > h.cfg.LateAfter {
					h.lateOffered.Add(1)
					h.at(now).lateOffered.Add(1)
				}
				h.join(ctx, id)
			}
		}()
	}
	for id, a := range h.cfg.Arrivals {
		if d := time.Until(h.start.Add(a)); d > time.Millisecond && !wait.Sleep(ctx, d) {
			break
		}
		select {
		case next <- uint32(id):
			continue
		case <-ctx.Done():
		}
		break
	}
	close(next)
	for range h.cfg.Joiners {
		<-done
	}
}

// joinAnswered counts one join request's outcome in its second (open
// loop only).
func (h *holdRun) joinAnswered(sent time.Time, code int, err error) {
	if h.seconds == nil {
		return
	}
	h.at(sent).sent.Add(1)
	now := time.Now()
	s := h.at(now)
	switch {
	case err != nil:
		s.failed.Add(1)
		return
	case code == fasthttp.StatusOK:
		s.ok.Add(1)
	case code == fasthttp.StatusTooManyRequests:
		s.limited.Add(1)
	case code == fasthttp.StatusServiceUnavailable:
		s.unavailable.Add(1)
	default:
		s.other.Add(1)
	}
	s.answered.Add(1)
	s.join.add(now.Sub(sent))
}

// claim claims once for person id with the admission token of their
// status answer, under one Idempotency-Key for every retry, sent again
// as client/'s rules say (holdRetry).
func (h *holdRun) claim(ctx context.Context, id uint32, token string) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	user := h.cfg.UserPrefix + strconv.FormatUint(uint64(id), 10)
	key := "k-" + user
	for n := 1; ctx.Err() == nil; n++ {
		code, body, err := h.send(id, fasthttp.MethodPost, "/claim", token, req, resp, "Idempotency-Key", key)
		switch {
		case err == nil && (code == fasthttp.StatusCreated || code == fasthttp.StatusOK):
			c, err := client.ParseClaim(body)
			if err != nil {
				h.fail("claim %d: %v: %s", id, err, body)
				return
			}
			h.claimed.Add(1)
			if h.seconds != nil {
				h.at(time.Now()).claims.Add(1)
			}
			h.mu.Lock()
			h.claims[user] = c.ID
			h.mu.Unlock()
			return
		case err == nil && (code == fasthttp.StatusGone || code == fasthttp.StatusConflict):
			h.claimGone.Add(1)
			return
		}
		// A request without an answer may have been granted: the retry
		// carries the same key and gets the same claim.
		d, again := next(n, code, resp)
		if !again {
			h.fail("claim %d: gave up: %d %v %s", id, code, err, body)
			return
		}
		if !wait.Sleep(ctx, d) {
			return
		}
	}
}
