package crowd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/internal/wait"
)

type runner struct {
	cfg Config
	hc  *http.Client // every shopper's client sends through it (a meter)
	sem chan struct{}
	c   counters
	lat recorder

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

// retry is the crowd's client.Retry: the client's rules, with as many
// sendings of one call as the crowd gave a claim before (a crowd under
// load meets more 429s and 503s than one app does).
var retry = client.Retry{Attempts: 20}

// shopper returns the client of shopper id at node base: named by the
// UserHeader when the crowd stands in for a gateway, else anonymous (the
// client keeps its own jar for the node's visitor cookie).
func (r *runner) shopper(id, base string) (*client.Client, error) {
	opts := []client.Option{client.WithHTTPClient(r.hc), client.WithRetry(retry)}
	if r.cfg.UserHeader != "" {
		opts = append(opts, client.WithUser(r.cfg.UserHeader, id))
	}
	return client.New(base, opts...)
}

// user plays one shopper from join to a final state, through client/:
// the client sends each call again by its rules (Retry-After, the same
// Idempotency-Key) and polls at the node's pace.
func (r *runner) user(ctx context.Context, id, base string) {
	ev := r.cfg.Event
	c, err := r.shopper(id, base)
	if err != nil {
		r.fail("client %s: %v", id, err)
		return
	}
	t, ok := r.join(ctx, c, id)
	if !ok {
		return
	}
	r.c.joined.Add(1)
	if rand.Float64() < r.cfg.Abandon {
		r.c.abandoned.Add(1)
		return
	}
	s, err := c.Wait(ctx, ev, t.Ticket, nil)
	if err != nil {
		if ctx.Err() == nil {
			r.fail("status %s: %v", id, err)
		}
		return
	}
	switch s.State {
	case client.StateAdmitted:
		r.c.admitted.Add(1)
		r.claim(ctx, c, id, s.AdmissionToken)
	case client.StateSoldOut:
		r.c.soldOut.Add(1)
	case client.StateNotSelected:
		r.c.notSelected.Add(1)
	default: // closed: the sale ended
		r.c.closed.Add(1)
	}
}

// join joins until the node gives a ticket. Before the queue opens the
// node refuses with 403 not_open and a Retry-After until it opens: the
// shopper comes back then (a page's countdown), the one refusal the
// client leaves to its caller. Any other 403 means the sale will not
// take this shopper (ended, lottery drawn): counted as closed.
func (r *runner) join(ctx context.Context, c *client.Client, id string) (client.Ticket, bool) {
	for {
		t, err := c.Join(ctx, r.cfg.Event)
		var refusal *client.Error
		refused := errors.As(err, &refusal)
		switch {
		case err == nil:
			return t, true
		case ctx.Err() != nil:
		case refused && refusal.Code == client.ErrNotOpen:
			// As a page counts down: no sooner than the node asked.
			if wait.Sleep(ctx, client.PollDelay(refusal.RetryAfter)) {
				continue
			}
		case refused && refusal.Status == http.StatusForbidden:
			r.c.closed.Add(1)
		default:
			r.fail("join %s: %v", id, err)
		}
		return client.Ticket{}, false
	}
}

// claim claims once, or fires identical requests at once when this user is
// one of the replayers, and checks that they all name the same claim and
// that at most one of them made it (201).
func (r *runner) claim(ctx context.Context, c *client.Client, id, token string) {
	key := "k-" + id
	n := 1
	if r.cfg.Replays > 0 && rand.Float64() < r.cfg.ReplayShare {
		n += r.cfg.Replays
	}
	ids := make([]string, n)
	var created atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cl, err := c.Claim(ctx, r.cfg.Event, token, key)
			switch {
			case err == nil:
				ids[i] = cl.ID
				if cl.Created {
					created.Add(1)
				}
			case ctx.Err() != nil:
			case errors.Is(err, client.ErrSoldOut):
				r.c.soldOut.Add(1)
			case errors.Is(err, client.ErrLimitReached):
				r.c.limited.Add(1)
			default:
				r.fail("claim %s: %v", id, err)
			}
		})
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
