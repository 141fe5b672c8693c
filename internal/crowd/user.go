package crowd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
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
// decodes the JSON answer; an error when no answer came or its body is
// not JSON.
func (r *runner) do(ctx context.Context, s *shopper, endpoint, method, url string, hdr map[string]string) (Answer, error) {
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return Answer{}, ctx.Err()
	}
	defer func() { <-r.sem }()
	r.c.requests.Add(1)
	a := Exchange(ctx, s.client, method, url, hdr)
	if a.Err == nil || a.Cut { // an answer came: its latency counts
		r.lat.add(endpoint, a.Took)
	}
	if a.Err != nil {
		return Answer{}, a.Err
	}
	if a.Undecodable {
		return a, fmt.Errorf("%s %s: %d: undecodable body", method, url, a.Status)
	}
	return a, nil
}

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
		case rep.Status == http.StatusOK:
			ticket = rep.Str("ticket")
		case rep.Status == http.StatusForbidden && rep.Code == "not_open",
			rep.Status == http.StatusTooManyRequests, rep.Status == http.StatusServiceUnavailable:
			if !Backoff(ctx, rep.RetryAfter) {
				return
			}
		case rep.Status == http.StatusForbidden:
			r.c.closed.Add(1)
			return
		default:
			r.fail("join %s: %d %s", id, rep.Status, rep.Code)
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
		if rep.Status != http.StatusOK {
			if rep.Status == http.StatusTooManyRequests || rep.Status == http.StatusServiceUnavailable {
				if !wait.Sleep(ctx, max(rep.RetryAfter, time.Second)) {
					return
				}
				continue
			}
			r.fail("status %s: %d %s", id, rep.Status, rep.Code)
			return
		}
		switch rep.Str("state") {
		case "admitted":
			r.c.admitted.Add(1)
			r.claim(ctx, s, ev, rep.Str("admission_token"))
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
		if !wait.Sleep(ctx, rep.PollAfter(50*time.Millisecond, r.cfg.MaxPoll)) {
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
		switch rep.Status {
		case http.StatusCreated:
			created.Add(1)
			return rep.Str("claim_id")
		case http.StatusOK:
			return rep.Str("claim_id")
		case http.StatusGone:
			r.c.soldOut.Add(1)
			return ""
		case http.StatusConflict:
			r.c.limited.Add(1)
			return ""
		case http.StatusServiceUnavailable, http.StatusTooManyRequests:
			if !wait.Sleep(ctx, max(rep.RetryAfter, 200*time.Millisecond)) {
				return ""
			}
			continue
		default:
			r.fail("claim %s: %d %s", id, rep.Status, rep.Code)
			return ""
		}
	}
	r.fail("claim %s: gave up after retries", id)
	return ""
}
