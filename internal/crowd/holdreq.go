package crowd

import (
	"bytes"
	"context"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

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

// send sends one request of person id and returns the status, the body
// (valid until resp is released) and the Retry-After.
// kv are more headers, name and value pairs.
func (h *holdRun) send(id uint32, method, path, ticket string, req *fasthttp.Request, resp *fasthttp.Response, kv ...string) (int, []byte, time.Duration, error) {
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
		return 0, nil, 0, err
	}
	ra, _ := strconv.Atoi(string(resp.Header.Peek("Retry-After")))
	return resp.StatusCode(), resp.Body(), time.Duration(ra) * time.Second, nil
}

func (h *holdRun) join(ctx context.Context, id uint32) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for attempt := 0; ctx.Err() == nil; attempt++ {
		start := time.Now()
		code, body, retry, err := h.send(id, fasthttp.MethodPost, "/join", "", req, resp)
		h.joinLat.add(time.Since(start))
		h.joinAnswered(start, code, err)
		switch {
		case err == nil && code == fasthttp.StatusOK:
			h.tickets[id] = string(jsonString(body, "ticket"))
			h.joined.Add(1)
			h.answered(ctx, id, body, true)
			return
		case attempt >= 20:
			h.fail("join %d: gave up: %d %v %s", id, code, err, body)
			return
		case err != nil || code == fasthttp.StatusTooManyRequests || code == fasthttp.StatusServiceUnavailable:
			if !wait.Sleep(ctx, max(retry, 100*time.Millisecond)) {
				return
			}
		default:
			h.fail("join %d: %d %s", id, code, body)
			return
		}
	}
}

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
	code, body, retry, err := h.send(id, fasthttp.MethodGet, "/status", h.tickets[id], req, resp)
	h.statusLat.add(time.Since(now))
	switch {
	case err == nil && code == fasthttp.StatusOK:
		h.polls.Add(1)
		if h.seconds != nil {
			h.at(time.Now()).polls.Add(1)
		}
		h.answered(ctx, id, body, false)
	case err == nil && (code == fasthttp.StatusTooManyRequests || code == fasthttp.StatusServiceUnavailable):
		h.schedule(id, now, uint32(max(retry, time.Second)/time.Millisecond))
	default:
		h.fail("status %d: %d %v %s", id, code, err, body)
		h.schedule(id, now, uint32(time.Second/time.Millisecond))
	}
}

// answered acts on a join or status answer: an admitted person (or one
// whose sale is over) stops polling, anyone else polls again at the
// poll_after_ms asked for. With Claim an admitted person claims first
// (one admitted by their join answer polls at once for the admission
// token, which only a status answer carries).
func (h *holdRun) answered(ctx context.Context, id uint32, body []byte, join bool) {
	if h.positions != nil {
		if p := jsonInt(body, "position"); p > 0 && p <= 1<<32-1 {
			h.positions[id] = uint32(p)
		}
	}
	switch string(jsonString(body, "state")) {
	case "admitted":
		if h.cfg.Claim && join {
			h.schedule(id, time.Now(), 0)
			return
		}
		h.admitted.Add(1)
		h.setInterval(id, 0)
		if h.cfg.Claim {
			h.claim(ctx, id, string(jsonString(body, "admission_token")))
		}
	case "sold_out", "closed", "not_selected":
		h.setInterval(id, 0)
	default:
		h.schedule(id, time.Now(), uint32(max(jsonInt(body, "poll_after_ms"), 50)))
	}
}

// schedule asks for person id's next poll ms milliseconds after from.
func (h *holdRun) schedule(id uint32, from time.Time, ms uint32) {
	h.setInterval(id, ms)
	at := from.Add(time.Duration(ms) * time.Millisecond)
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

// jsonString finds "key":"value" in a flat JSON object and returns value
// (anteroom's answers escape nothing in the fields read here).
func jsonString(body []byte, key string) []byte {
	i := bytes.Index(body, []byte(`"`+key+`":"`))
	if i < 0 {
		return nil
	}
	v := body[i+len(key)+4:]
	if j := bytes.IndexByte(v, '"'); j >= 0 {
		return v[:j]
	}
	return nil
}

// jsonInt finds "key":number in a flat JSON object.
func jsonInt(body []byte, key string) int64 {
	i := bytes.Index(body, []byte(`"`+key+`":`))
	if i < 0 {
		return 0
	}
	v := body[i+len(key)+3:]
	j := 0
	for j < len(v) && v[j] >= '0' && v[j] <= '9' {
		j++
	}
	n, _ := strconv.ParseInt(string(v[:j]), 10, 64)
	return n
}
