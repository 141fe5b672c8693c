package crowd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/internal/wait"
)

type runner struct {
	cfg       Config
	transport *http.Transport // shared by every user's client
	sem       chan struct{}
	c         counters
	lat       recorder

	mu        sync.Mutex
	claims    map[string][]string
	firstErrs []string
}

type reply struct {
	status     int
	body       map[string]any
	retryAfter time.Duration
}

func (r *runner) fail(format string, a ...any) {
	r.c.errors.Add(1)
	r.mu.Lock()
	if len(r.firstErrs) < 10 {
		r.firstErrs = append(r.firstErrs, fmt.Sprintf(format, a...))
	}
	r.mu.Unlock()
}

// shopper is one simulated user: a browser-like client with its own
// cookie jar (the visitor cookie names it in anonymous mode) and the
// headers that name it when a gateway does.
type shopper struct {
	id     string
	client *http.Client
	who    map[string]string
}

func (r *runner) newShopper(id string) *shopper {
	jar, _ := cookiejar.New(nil) // never fails without options
	s := &shopper{id: id, client: &http.Client{Timeout: 15 * time.Second, Transport: r.transport, Jar: jar}, who: map[string]string{}}
	if r.cfg.UserHeader != "" {
		s.who[r.cfg.UserHeader] = id
	}
	return s
}

// with returns the shopper's identity headers plus the pairs kv.
func (s *shopper) with(kv ...string) map[string]string {
	out := make(map[string]string, len(s.who)+len(kv)/2)
	for k, v := range s.who {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// do sends one request of shopper s within the concurrency bound and
// decodes the JSON answer.
func (r *runner) do(ctx context.Context, s *shopper, endpoint, method, url string, hdr map[string]string) (reply, error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return reply{}, ctx.Err()
	}
	defer func() { <-r.sem }()
	r.c.requests.Add(1)
	req, err := http.NewRequestWithContext(ctx, method, url, http.NoBody)
	if err != nil {
		return reply{}, err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer func() { r.lat.add(endpoint, time.Since(start)) }()
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return reply{}, err
	}
	out := reply{status: resp.StatusCode}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
		out.retryAfter = time.Duration(s) * time.Second
	}
	if len(raw) > 0 {
		if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&out.body); err != nil {
			return out, fmt.Errorf("%s %s: %d: undecodable body", method, url, resp.StatusCode)
		}
	}
	return out, nil
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }
func num(m map[string]any, k string) int64  { f, _ := m[k].(float64); return int64(f) }

// user plays one shopper from join to a final state.
func (r *runner) user(ctx context.Context, id, base string) {
	ev := base + "/events/" + r.cfg.Event
	s := r.newShopper(id)
	var ticket string
	for ticket == "" {
		rep, err := r.do(ctx, s, "join", http.MethodPost, ev+"/join", s.with())
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			r.fail("join %s: %v", id, err)
			return
		case rep.status == http.StatusOK:
			ticket = str(rep.body, "ticket")
		case rep.status == http.StatusForbidden && str(rep.body, "code") == "not_open",
			rep.status == http.StatusTooManyRequests, rep.status == http.StatusServiceUnavailable:
			pause := min(max(rep.retryAfter, 200*time.Millisecond), 2*time.Second)
			if !wait.Sleep(ctx, pause+time.Duration(rand.Int64N(int64(200*time.Millisecond)))) {
				return
			}
		case rep.status == http.StatusForbidden:
			r.c.closed.Add(1)
			return
		default:
			r.fail("join %s: %d %s", id, rep.status, str(rep.body, "code"))
			return
		}
	}
	r.c.joined.Add(1)
	if rand.Float64() < r.cfg.Abandon {
		r.c.abandoned.Add(1)
		return
	}
	auth := s.with("Authorization", "Bearer "+ticket)
	for {
		rep, err := r.do(ctx, s, "status", http.MethodGet, ev+"/status", auth)
		if err != nil {
			if ctx.Err() == nil {
				r.fail("status %s: %v", id, err)
			}
			return
		}
		if rep.status != http.StatusOK {
			if rep.status == http.StatusTooManyRequests || rep.status == http.StatusServiceUnavailable {
				if !wait.Sleep(ctx, max(rep.retryAfter, time.Second)) {
					return
				}
				continue
			}
			r.fail("status %s: %d %s", id, rep.status, str(rep.body, "code"))
			return
		}
		switch str(rep.body, "state") {
		case "admitted":
			r.c.admitted.Add(1)
			r.claim(ctx, s, ev, str(rep.body, "admission_token"))
			return
		case "sold_out":
			r.c.soldOut.Add(1)
			return
		case "not_selected":
			r.c.notSelected.Add(1)
			return
		case "closed":
			r.c.closed.Add(1)
			return
		}
		pause := min(time.Duration(num(rep.body, "poll_after_ms"))*time.Millisecond, r.cfg.MaxPoll)
		if !wait.Sleep(ctx, max(pause, 50*time.Millisecond)) {
			return
		}
	}
}

// claim claims once, or fires identical requests at once when this user is
// one of the replayers, and checks that they all name the same claim.
func (r *runner) claim(ctx context.Context, s *shopper, ev, token string) {
	id := s.id
	hdr := s.with("Authorization", "Bearer "+token, "Idempotency-Key", "k-"+id)
	n := 1
	if r.cfg.Replays > 0 && rand.Float64() < r.cfg.ReplayShare {
		n += r.cfg.Replays
	}
	ids := make([]string, n)
	var created atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = r.claimOnce(ctx, s, ev, hdr, &created)
		}()
	}
	wg.Wait()
	if ids[0] == "" {
		return
	}
	for _, c := range ids[1:] {
		if c != ids[0] {
			r.c.mismatch.Add(1)
		}
	}
	if created.Load() > 1 {
		r.c.mismatch.Add(1)
	}
	r.c.granted.Add(1)
	r.c.replays.Add(int64(n - 1))
	r.mu.Lock()
	r.claims[id] = append(r.claims[id], ids[0])
	r.mu.Unlock()
}

func (r *runner) claimOnce(ctx context.Context, s *shopper, ev string, hdr map[string]string, created *atomic.Int64) string {
	id := s.id
	for attempt := 0; attempt < 20; attempt++ {
		rep, err := r.do(ctx, s, "claim", http.MethodPost, ev+"/claim", hdr)
		if err != nil {
			if ctx.Err() != nil {
				return ""
			}
			// A timeout may hide a grant: retry with the same key.
			if !wait.Sleep(ctx, 200*time.Millisecond) {
				return ""
			}
			continue
		}
		switch rep.status {
		case http.StatusCreated:
			created.Add(1)
			return str(rep.body, "claim_id")
		case http.StatusOK:
			return str(rep.body, "claim_id")
		case http.StatusGone:
			r.c.soldOut.Add(1)
			return ""
		case http.StatusConflict:
			r.c.limited.Add(1)
			return ""
		case http.StatusServiceUnavailable, http.StatusTooManyRequests:
			if !wait.Sleep(ctx, max(rep.retryAfter, 200*time.Millisecond)) {
				return ""
			}
			continue
		default:
			r.fail("claim %s: %d %s", id, rep.status, str(rep.body, "code"))
			return ""
		}
	}
	r.fail("claim %s: gave up after retries", id)
	return ""
}
