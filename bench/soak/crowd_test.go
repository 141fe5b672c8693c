//go:build soak && linux

package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// crowd plays shoppers against the current sale: joins, polls, claims
// with retries under the same Idempotency-Key (and, for some, a twin sent
// at once to another node), replays of answered claims, releases, lookups,
// and abandoners who join and never come back or are admitted and never
// claim. Every exchange goes to the history.
type crowd struct {
	h      *history
	urls   []string
	client *http.Client
	wg     sync.WaitGroup
	n      int
}

func newCrowd(h *history, urls []string) *crowd {
	return &crowd{h: h, urls: urls, client: &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
		MaxIdleConnsPerHost: 64, IdleConnTimeout: 10 * time.Second,
	}}}
}

// shopper is one person's plan, drawn from the seeded generator.
type shopper struct {
	id      string
	sale    string
	node    int
	abandon int // 0 buys; 1 leaves after joining; 2 leaves once admitted
	keys    int
	twin    bool
	replay  bool
	release bool
	timeout time.Duration
	think   time.Duration
	rnd     *rand.Rand
}

// arrive starts n shoppers on sale with plans drawn from rnd.
func (c *crowd) arrive(ctx context.Context, sale string, n int, rnd *rand.Rand) {
	for range n {
		c.n++
		s := &shopper{id: fmt.Sprintf("u%d", c.n), sale: sale, node: rnd.IntN(len(c.urls)), keys: 1 + rnd.IntN(3),
			twin: rnd.Float64() < 0.1, replay: rnd.Float64() < 0.2, release: rnd.Float64() < 0.15,
			timeout: []time.Duration{2 * time.Second, 5 * time.Second}[rnd.IntN(2)],
			think:   time.Duration(rnd.Int64N(int64(2 * time.Second))),
			rnd:     rand.New(rand.NewPCG(rnd.Uint64(), rnd.Uint64()))}
		switch r := rnd.Float64(); {
		case r < 0.08:
			s.abandon = 1
		case r < 0.13:
			s.abandon = 2
		}
		c.wg.Go(func() { c.play(ctx, s) })
	}
}

// wait returns when every shopper is done.
func (c *crowd) wait() { c.wg.Wait() }

// answer is a decoded response.
type answer struct {
	op
	body map[string]any
}

func (c *crowd) do(ctx context.Context, s *shopper, kind, method, path string, hdr map[string]string) answer {
	url := c.urls[s.node%len(c.urls)]
	a := answer{op: op{Sale: s.sale, User: s.id, Kind: kind, Node: strconv.Itoa(s.node % len(c.urls)), Key: hdr["Idempotency-Key"]}}
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, method, url+path, http.NoBody)
	req.Header.Set("X-User-ID", s.id)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return a // the run is over: not an answer, not recorded
		}
		a.Err = shortErr(err)
		s.node++ // try another node next time
		c.h.record(a.op)
		return a
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	if err != nil {
		a.Err = shortErr(err)
		c.h.record(a.op)
		return a
	}
	a.Status = resp.StatusCode
	a.Retry = resp.Header.Get("Retry-After") != ""
	_ = json.Unmarshal(raw, &a.body)
	a.Code, _ = a.body["code"].(string)
	a.State, _ = a.body["state"].(string)
	if a.State == "" {
		a.State, _ = a.body["status"].(string)
	}
	a.ClaimID, _ = a.body["claim_id"].(string)
	if p, ok := a.body["position"].(float64); ok && kind == "join" {
		a.Pos = int64(p)
	}
	c.h.record(a.op)
	return a
}

func shortErr(err error) string {
	var ne net.Error
	if ok := asNetErr(err, &ne); ok && ne.Timeout() {
		return "timeout"
	}
	return "unreachable"
}

// retry reports whether a asks for another try, after waiting.
func retry(ctx context.Context, s *shopper, a answer) bool {
	if a.Err == "" && a.Status != http.StatusTooManyRequests && a.Status < 500 {
		return false
	}
	return sleep(ctx, 200*time.Millisecond+time.Duration(s.rnd.Int64N(int64(600*time.Millisecond))))
}

// play runs one shopper to a final answer or the end of the run.
func (c *crowd) play(ctx context.Context, s *shopper) {
	base := "/events/" + s.sale
	var ticket string
	for ticket == "" {
		a := c.do(ctx, s, "join", http.MethodPost, base+"/join", nil)
		if a.Status == http.StatusOK {
			ticket, _ = a.body["ticket"].(string)
		} else if !retry(ctx, s, a) {
			return
		}
	}
	if s.abandon == 1 {
		return
	}
	auth := map[string]string{"Authorization": "Bearer " + ticket}
	var token string
	for token == "" {
		a := c.do(ctx, s, "status", http.MethodGet, base+"/status", auth)
		switch {
		case a.Status == http.StatusOK && a.State == "admitted":
			token, _ = a.body["admission_token"].(string)
		case a.Status == http.StatusOK && (a.State == "sold_out" || a.State == "closed" || a.State == "not_selected"):
			return
		case a.Status == http.StatusOK:
			ms, _ := a.body["poll_after_ms"].(float64)
			if !sleep(ctx, min(max(time.Duration(ms)*time.Millisecond, 100*time.Millisecond), time.Second)) {
				return
			}
		case !retry(ctx, s, a):
			return
		}
	}
	if s.abandon == 2 {
		return
	}
	var granted []string
	for k := range s.keys {
		if k > 0 && !sleep(ctx, s.think) {
			return
		}
		key := fmt.Sprintf("%s-k%d", s.id, k)
		hdr := map[string]string{"Authorization": "Bearer " + token, "Idempotency-Key": key}
		copies := 1
		if k == 0 && s.twin {
			copies = 2
		}
		finals := make([]answer, copies)
		var wg sync.WaitGroup
		for j := range copies {
			twin := *s
			twin.node += j
			twin.rnd = rand.New(rand.NewPCG(uint64(j), s.rnd.Uint64()))
			wg.Go(func() { finals[j] = c.claim(ctx, &twin, base, hdr) })
		}
		wg.Wait()
		a := finals[0]
		if a.Status != http.StatusCreated && a.Status != http.StatusOK {
			return // sold out, limit, or the run ended
		}
		granted = append(granted, a.ClaimID)
		if s.replay {
			c.do(ctx, s, "replay", http.MethodPost, base+"/claim", hdr)
		}
	}
	for _, id := range granted {
		c.do(ctx, s, "lookup", http.MethodGet, base+"/claims/"+id, nil)
	}
	if s.release && len(granted) > 0 {
		id := granted[s.rnd.IntN(len(granted))]
		for {
			a := c.do(ctx, s, "release", http.MethodPost, base+"/claims/"+id+"/release", nil)
			a.Kind = "release"
			if !retry(ctx, s, a) {
				break
			}
		}
		c.do(ctx, s, "lookup", http.MethodGet, base+"/claims/"+id, nil)
	}
}

// claim sends one claim until it has a final answer.
func (c *crowd) claim(ctx context.Context, s *shopper, base string, hdr map[string]string) answer {
	for {
		a := c.do(ctx, s, "claim", http.MethodPost, base+"/claim", hdr)
		if !retry(ctx, s, a) {
			return a
		}
	}
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func asNetErr(err error, ne *net.Error) bool { return errors.As(err, ne) }
