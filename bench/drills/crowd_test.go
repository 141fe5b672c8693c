//go:build drills

package drills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// crowdConfig is a bounded crowd of shoppers. Unlike internal/crowd, whose
// users claim once from one node, a drill shopper claims several times
// (one more than the per-user limit, to test it), retries every claim that
// has no final answer with the same Idempotency-Key for as long as the
// crowd runs, moves to another node when its node stops answering, and
// records every answer, so that the verdict knows exactly what each client
// was told.
type crowdConfig struct {
	// Event is the sale; URLs are the nodes, user i starts on URLs[i%n].
	Event string
	URLs  []string
	// Users join over Spread.
	Users  int
	Prefix string
	Spread time.Duration
	// Keys is how many claims each admitted user makes, each with its own
	// Idempotency-Key.
	Keys int
	// TwinShare is the share of users whose first claim is sent twice at
	// once with the same key.
	TwinShare float64
	// Timeouts bound each request, as a client's own timeout: user i
	// uses Timeouts[i % len(Timeouts)].
	//
	// Default: 2s
	Timeouts []time.Duration
	// MaxPoll caps the server's poll_after_ms.
	//
	// Default: 1s
	MaxPoll time.Duration
}

// ack is one claim a client was answered 201 or 200 for.
type ack struct {
	ClaimID, User, Key, Node string
	Status                   int
	At                       time.Time
}

// crowd runs a crowdConfig and keeps its account. Its methods are safe for
// concurrent use.
type crowd struct {
	cfg    crowdConfig
	client *http.Client

	mu        sync.Mutex
	acks      []ack
	byKey     map[string]string // user/key → first claim id answered
	mismatch  int               // a key answered with two different claim ids
	outcomes  map[string]int    // "claim 503 degraded", "claim timeout", ...
	firstErrs []string

	users, joined, admitted, soldOut, limited, gaveUp, done atomic.Int64
}

func newCrowd(cfg crowdConfig) *crowd {
	if len(cfg.Timeouts) == 0 {
		cfg.Timeouts = []time.Duration{2 * time.Second}
	}
	if cfg.MaxPoll <= 0 {
		cfg.MaxPoll = time.Second
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "s"
	}
	return &crowd{
		cfg: cfg, byKey: map[string]string{}, outcomes: map[string]int{},
		client: &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
			MaxIdleConnsPerHost: 256, IdleConnTimeout: 10 * time.Second,
		}},
	}
}

// run plays every user until each has a final answer or ctx ends. It
// returns when all users are done.
func (c *crowd) run(ctx context.Context) {
	defer c.client.CloseIdleConnections()
	var wg sync.WaitGroup
	for i := range c.cfg.Users {
		delay := time.Duration(0)
		if c.cfg.Spread > 0 {
			delay = time.Duration(rand.Int64N(int64(c.cfg.Spread)))
		}
		wg.Go(func() {
			defer c.done.Add(1)
			c.users.Add(1)
			if sleep(ctx, delay) {
				c.user(ctx, fmt.Sprintf("%s%d", c.cfg.Prefix, i), i)
			}
		})
	}
	wg.Wait()
}

// start runs the crowd in the background; wait returns when it is done.
func (c *crowd) start(ctx context.Context) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	return func() { <-done }
}

// answer is one HTTP exchange's outcome.
type answer struct {
	status     int
	code       string // problem+json code
	body       map[string]any
	retryAfter time.Duration
	err        error // transport error: no answer
}

// kind names an outcome for the tally: "201", "503 degraded", "timeout",
// "refused", ...
func (a answer) kind() string {
	if a.err != nil {
		var ne net.Error
		switch {
		case errors.As(a.err, &ne) && ne.Timeout():
			return "timeout"
		case errors.Is(a.err, io.EOF) || errors.Is(a.err, io.ErrUnexpectedEOF):
			return "connection closed"
		default:
			return "connection refused/reset"
		}
	}
	if a.code != "" {
		return strconv.Itoa(a.status) + " " + a.code
	}
	return strconv.Itoa(a.status)
}

func (c *crowd) do(ctx context.Context, timeout time.Duration, method, url string, hdr map[string]string) answer {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, http.NoBody)
	if err != nil {
		return answer{err: err}
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return answer{err: err}
	}
	a := answer{status: resp.StatusCode}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		a.retryAfter = time.Duration(s) * time.Second
	}
	_ = json.Unmarshal(raw, &a.body)
	a.code, _ = a.body["code"].(string)
	return a
}

func (c *crowd) tally(what string, a answer) {
	c.mu.Lock()
	c.outcomes[what+" "+a.kind()]++
	c.mu.Unlock()
}

func (c *crowd) fail(format string, a ...any) {
	c.gaveUp.Add(1)
	c.mu.Lock()
	if len(c.firstErrs) < 8 {
		c.firstErrs = append(c.firstErrs, fmt.Sprintf(format, a...))
	}
	c.mu.Unlock()
}

// backoff waits after an answer that asks for a retry: Retry-After capped
// at 2 s (a drill must move on), at least 200 ms, with jitter.
func backoff(ctx context.Context, a answer) bool {
	d := min(max(a.retryAfter, 200*time.Millisecond), 2*time.Second)
	return sleep(ctx, d+time.Duration(rand.Int64N(int64(200*time.Millisecond))))
}

// retryable reports whether a may be retried: no answer, 429, 5xx.
func retryable(a answer) bool {
	return a.err != nil || a.status == http.StatusTooManyRequests || a.status >= 500
}

// route is a shopper's current node; it moves to the next one when the
// node does not answer.
type route struct {
	urls    []string
	i       int
	timeout time.Duration
}

func (n *route) url() string { return n.urls[n.i%len(n.urls)] }

func (n *route) failed(a answer) {
	if a.err != nil && len(n.urls) > 1 {
		n.i++
	}
}

// user plays one shopper: join, poll, claim Keys times.
func (c *crowd) user(ctx context.Context, id string, i int) {
	at := &route{urls: c.cfg.URLs, i: i, timeout: c.cfg.Timeouts[i%len(c.cfg.Timeouts)]}
	who := map[string]string{"X-User-ID": id}
	path := "/events/" + c.cfg.Event
	var ticket string
	for ticket == "" {
		a := c.do(ctx, at.timeout, http.MethodPost, at.url()+path+"/join", who)
		if ctx.Err() != nil {
			return
		}
		switch {
		case a.status == http.StatusOK:
			ticket, _ = a.body["ticket"].(string)
		case retryable(a) || a.code == "not_open":
			c.tally("join", a)
			at.failed(a)
			if !backoff(ctx, a) {
				return
			}
		default:
			c.tally("join", a)
			c.fail("join %s: %s", id, a.kind())
			return
		}
	}
	c.joined.Add(1)
	auth := map[string]string{"Authorization": "Bearer " + ticket}
	var token string
	for token == "" {
		a := c.do(ctx, at.timeout, http.MethodGet, at.url()+path+"/status", auth)
		if ctx.Err() != nil {
			return
		}
		if a.status != http.StatusOK {
			c.tally("status", a)
			if !retryable(a) {
				c.fail("status %s: %s", id, a.kind())
				return
			}
			at.failed(a)
			if !backoff(ctx, a) {
				return
			}
			continue
		}
		switch state, _ := a.body["state"].(string); state {
		case "admitted":
			token, _ = a.body["admission_token"].(string)
		case "sold_out", "closed", "not_selected":
			c.soldOut.Add(1)
			return
		default:
			ms, _ := a.body["poll_after_ms"].(float64)
			wait := min(time.Duration(ms)*time.Millisecond, c.cfg.MaxPoll)
			if !sleep(ctx, max(wait, 50*time.Millisecond)) {
				return
			}
		}
	}
	c.admitted.Add(1)
	for k := range c.cfg.Keys {
		key := fmt.Sprintf("%s-k%d", id, k)
		copies := 1
		if k == 0 && rand.Float64() < c.cfg.TwinShare {
			copies = 2
		}
		final := make([]string, copies)
		var wg sync.WaitGroup
		for j := range copies {
			own := &route{urls: at.urls, i: at.i + j, timeout: at.timeout} // a twin goes to another node when there is one
			wg.Go(func() { final[j] = c.claim(ctx, id, key, token, own) })
		}
		wg.Wait()
		if slices.Contains(final, "sold_out") || slices.Contains(final, "limit") || slices.Contains(final, "") {
			return
		}
	}
}

// claim sends one claim until it has a final answer, retrying with the
// same Idempotency-Key. It returns "granted", "limit", "sold_out", or ""
// when it gave up.
func (c *crowd) claim(ctx context.Context, user, key, token string, at *route) string {
	hdr := map[string]string{"X-User-ID": user, "Authorization": "Bearer " + token, "Idempotency-Key": key}
	for {
		url := at.url()
		a := c.do(ctx, at.timeout, http.MethodPost, url+"/events/"+c.cfg.Event+"/claim", hdr)
		if ctx.Err() != nil {
			return ""
		}
		c.tally("claim", a)
		switch {
		case a.status == http.StatusCreated || a.status == http.StatusOK:
			id, _ := a.body["claim_id"].(string)
			c.acked(ack{ClaimID: id, User: user, Key: key, Node: url, Status: a.status, At: time.Now()})
			return "granted"
		case a.status == http.StatusConflict && a.code == "limit_reached":
			c.limited.Add(1)
			return "limit"
		case a.status == http.StatusGone:
			c.soldOut.Add(1)
			return "sold_out"
		case retryable(a):
			at.failed(a)
			if !backoff(ctx, a) {
				return ""
			}
		default:
			c.fail("claim %s/%s: %s", user, key, a.kind())
			return ""
		}
	}
}

func (c *crowd) acked(a ack) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acks = append(c.acks, a)
	k := a.User + "/" + a.Key
	if first, ok := c.byKey[k]; !ok {
		c.byKey[k] = a.ClaimID
	} else if first != a.ClaimID {
		c.mismatch++
	}
}

// snapshot returns the acknowledged claims so far.
func (c *crowd) snapshot() []ack {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.acks)
}

// claimOutcomes returns the tally of claim answers, "201" → n, ...
func (c *crowd) claimOutcomes() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.outcomes {
		if rest, ok := strings.CutPrefix(k, "claim "); ok {
			out[rest] += n
		}
	}
	return out
}

// outcomesLine renders a tally, largest first.
func outcomesLine(m map[string]int) string {
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range m {
		all = append(all, kv{k, n})
	}
	slices.SortFunc(all, func(a, b kv) int {
		if a.n != b.n {
			return b.n - a.n
		}
		if a.k < b.k {
			return -1
		}
		return 1
	})
	s := ""
	for i, e := range all {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s: %d", e.k, e.n)
	}
	if s == "" {
		return "none"
	}
	return s
}

// refusals counts the claim answers that refused honestly (503 with
// Retry-After, 429), the client timeouts and connection failures, and the
// dishonest answers (500 and other unexpected codes).
func refusals(m map[string]int) (honest, timeouts, unreachable, dishonest int) {
	for k, n := range m {
		switch {
		case strings.HasPrefix(k, "503") || strings.HasPrefix(k, "429"):
			honest += n
		case k == "timeout":
			timeouts += n
		case strings.HasPrefix(k, "connection"):
			unreachable += n
		case strings.HasPrefix(k, "5"):
			dishonest += n
		}
	}
	return
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
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
