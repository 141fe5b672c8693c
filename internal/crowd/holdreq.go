package crowd

import (
	"context"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/internal/wait"
)

// joinAll joins every person, Joiners at a time, and schedules each one's
// first poll at the poll_after_ms of the join answer.
func (h *holdRun) joinAll(ctx context.Context) {
	var next, done = make(chan uint32), make(chan struct{})
	for range h.cfg.Joiners {
		go func() {
			defer func() { done <- struct{}{} }()
			for id := range next {
				h.join(ctx, id)
			}
		}()
	}
	for id := range uint32(h.cfg.People) {
		select {
		case next <- id:
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

// holdRetry is client/'s retry rules with as many sendings of one call
// as the crowd gave a join or a claim before.
var holdRetry = client.Retry{Attempts: 20}

// send sends one request of person id and returns the status (0 when no
// answer came) and the body (valid until resp is released).
// kv are more headers, name and value pairs.
func (h *holdRun) send(id uint32, method, path, ticket string, req *fasthttp.Request, resp *fasthttp.Response, kv ...string) (int, []byte, error) {
	c := h.clients[int(id)%len(h.clients)]
	req.Reset()
	req.SetRequestURI("http://" + c.Addr + "/events/" + h.cfg.Event + path)
	req.Header.SetMethod(method)
	req.Header.Set(h.cfg.UserHeader, h.cfg.UserPrefix+strconv.FormatUint(uint64(id), 10))
	if ticket != "" {
		req.Header.Set("Authorization", "Bearer "+ticket)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	if err := c.Do(req, resp); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode(), resp.Body(), nil
}

// next is client/'s rule (holdRetry) for the nth sending of a call that
// came to status (0: no answer) with resp's Retry-After: whether to send
// it again and after how long. Every call of the crowd may be sent again
// after no answer: people are named by UserHeader (a repeated join
// returns the same ticket), polls are GETs and claims carry their
// Idempotency-Key.
func next(n, status int, resp *fasthttp.Response) (time.Duration, bool) {
	a := client.Attempt{N: n, Status: status, Replayable: true}
	if status != 0 {
		if v := resp.Header.Peek("Retry-After"); len(v) > 0 {
			a.HasRetryAfter = true
			a.RetryAfter, _ = client.ParseRetryAfter(string(v), time.Now())
		}
	}
	return holdRetry.Next(a)
}

func (h *holdRun) join(ctx context.Context, id uint32) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for n := 1; ctx.Err() == nil; n++ {
		start := time.Now()
		code, body, err := h.send(id, fasthttp.MethodPost, "/join", "", req, resp)
		h.joinLat.add(time.Since(start))
		h.joinAnswered(start, code, err)
		if err == nil && code == fasthttp.StatusOK {
			t, err := client.ParseJoin(body)
			if err != nil {
				h.fail("join %d: %v: %s", id, err, body)
				return
			}
			h.tickets[id] = t.Ticket
			h.joined.Add(1)
			h.answered(ctx, id, t.Position, t.State, t.PollAfter, "", true)
			return
		}
		d, again := next(n, code, resp)
		if !again {
			h.fail("join %d: gave up: %d %v %s", id, code, err, body)
			return
		}
		if !wait.Sleep(ctx, d) {
			return
		}
	}
}

// poll sends person id's status poll: one call, each poll a new one.
// After a 429 or 503, or no answer (counted as an error), the person
// polls again when client/'s rules say; any other refusal is final (the
// person stops, counted as an error).
func (h *holdRun) poll(ctx context.Context, id uint32) {
	if ctx.Err() != nil {
		return // the run is over: what is left in the queue is not sent
	}
	now := time.Now()
	if late := now.Sub(h.start) - time.Duration(h.due[id]); late > 0 {
		h.lag.add(late)
		if late > time.Second {
			h.late.Add(1)
		}
	} else {
		h.lag.add(0)
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	code, body, err := h.send(id, fasthttp.MethodGet, "/status", h.tickets[id], req, resp)
	h.statusLat.add(time.Since(now))
	if err == nil && code == fasthttp.StatusOK {
		s, perr := client.ParseStatus(body)
		if perr == nil {
			h.polls.Add(1)
			if h.seconds != nil {
				h.at(time.Now()).polls.Add(1)
			}
			h.answered(ctx, id, s.Position, s.State, s.PollAfter, s.AdmissionToken, false)
			return
		}
		err = perr
	}
	d, again := next(1, code, resp)
	if err != nil || !again {
		h.fail("status %d: %d %v %s", id, code, err, body)
	}
	if !again {
		h.setInterval(id, 0)
		return
	}
	h.schedule(id, now, d, d)
}

// answered acts on a join or status answer (its position, state, pace and
// admission token): an admitted person (or one whose sale is over) stops
// polling, anyone else polls again at the node's pace (client.PollDelay
// of its poll_after_ms). With Claim an admitted person claims first (one
// admitted by their join answer polls at once for the admission token,
// which only a status answer carries).
func (h *holdRun) answered(ctx context.Context, id uint32, pos int64, state client.State, pollAfter time.Duration, token string, join bool) {
	if h.positions != nil && pos > 0 && pos <= 1<<32-1 {
		h.positions[id] = uint32(pos)
	}
	switch state {
	case client.StateAdmitted:
		if h.cfg.Claim && join {
			h.schedule(id, time.Now(), 0, 0)
			return
		}
		h.admitted.Add(1)
		h.setInterval(id, 0)
		if h.cfg.Claim {
			h.claim(ctx, id, token)
		}
	case client.StateSoldOut, client.StateClosed, client.StateNotSelected:
		h.setInterval(id, 0)
	default:
		asked := pollAfter
		if asked <= 0 {
			asked = time.Second // client.PollDelay's pace when none is named
		}
		h.schedule(id, time.Now(), asked, client.PollDelay(pollAfter))
	}
}

// schedule asks for person id's next poll after from: the node asked for
// one every asked (0: no pace, not counted in Asked), the poll is due
// after.
func (h *holdRun) schedule(id uint32, from time.Time, asked, after time.Duration) {
	h.setInterval(id, uint32(min(asked/time.Millisecond, 1<<32-1)))
	at := from.Add(after)
	h.due[id] = int64(at.Sub(h.start))
	h.wheel.add(at, id)
}

// setInterval records the interval person id was asked to poll at (0: no
// longer polling) in the sum of polls asked for.
func (h *holdRun) setInterval(id uint32, ms uint32) {
	rate := func(ms uint32) int64 {
		if ms == 0 {
			return 0
		}
		return 1_000_000 / int64(ms)
	}
	h.asked.Add(rate(ms) - rate(h.interval[id]))
	h.interval[id] = ms
}
