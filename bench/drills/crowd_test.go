//go:build drills

package drills

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/internal/wait"
)

// crowdConfig is a bounded crowd of shoppers. Unlike internal/crowd's Run,
// whose users claim once from one node, a drill shopper claims several
// times (one more than the per-user limit, to test it), retries every
// claim that has no final answer with the same Idempotency-Key for as long
// as the crowd runs, moves to another node when its node stops answering,
// and records every answer, so that the verdict knows exactly what each
// client was told. Joins, polls and claims are calls of a client.Client
// (crowd.send), each sent once per turn of the shopper's loop; polls wait
// the node's pace (client.PollDelay) and retries wait as client/'s rules
// say (drillRetry).
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
	// Think is the longest pause between a shopper's claims (uniform
	// between 0 and Think), as people pause between two purchases.
	Think time.Duration
	// TwinShare is the share of users whose first claim is sent twice at
	// once with the same key.
	TwinShare float64
	// Timeouts bound each request, as a client's own timeout: user i
	// uses Timeouts[i % len(Timeouts)].
	//
	// Default: 2s
	Timeouts []time.Duration
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
	// positions is every position each user was answered (join and
	// status); fetched is when the holder of a position first received
	// an admission token.
	positions map[string][]int64
	fetched   map[int64]time.Time

	users, joined, admitted, soldOut, limited, gaveUp, done atomic.Int64
	began, ended                                            time.Time // set by run
}

func newCrowd(cfg crowdConfig) *crowd {
	if len(cfg.Timeouts) == 0 {
		cfg.Timeouts = []time.Duration{2 * time.Second}
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "s"
	}
	return &crowd{
		cfg: cfg, byKey: map[string]string{}, outcomes: map[string]int{},
		positions: map[string][]int64{}, fetched: map[int64]time.Time{},
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
	c.mu.Lock()
	c.began = time.Now()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.ended = time.Now()
		c.mu.Unlock()
	}()
	var wg sync.WaitGroup
	for i := range c.cfg.Users {
		delay := time.Duration(0)
		if c.cfg.Spread > 0 {
			delay = time.Duration(rand.Int64N(int64(c.cfg.Spread)))
		}
		wg.Go(func() {
			defer c.done.Add(1)
			c.users.Add(1)
			if wait.Sleep(ctx, delay) {
				c.user(ctx, fmt.Sprintf("%s%d", c.cfg.Prefix, i), i)
			}
		})
	}
	wg.Wait()
}

// start runs the crowd in the background; wait returns when it is done.
func (c *crowd) start(ctx context.Context) (finished func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	return func() { <-done }
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
	ev := c.cfg.Event
	var ticket string
	for n := 1; ticket == ""; n++ {
		var t client.Ticket
		a := c.send(ctx, at.timeout, id, at.url(), func(ctx context.Context, cl *client.Client) (status int, err error) {
			t, err = cl.Join(ctx, ev)
			return http.StatusOK, err
		})
		if ctx.Err() != nil {
			return
		}
		switch {
		case a.status == http.StatusOK:
			ticket = t.Ticket
			c.sawPosition(id, t.Position, false)
		case a.code == "not_open": // the queue opens after Retry-After
			c.tally("join", a)
			if !wait.Sleep(ctx, client.PollDelay(a.reply.RetryAfter)) {
				return
			}
		default:
			c.tally("join", a)
			at.failed(a)
			if !backoff(ctx, n, a) {
				if ctx.Err() == nil {
					c.fail("join %s: %s", id, a.kind())
				}
				return
			}
		}
	}
	c.joined.Add(1)
	var token string
	for n := 1; token == ""; n++ {
		var place client.Status
		a := c.send(ctx, at.timeout, id, at.url(), func(ctx context.Context, cl *client.Client) (status int, err error) {
			place, err = cl.Status(ctx, ev, ticket)
			return http.StatusOK, err
		})
		if ctx.Err() != nil {
			return
		}
		if a.status != http.StatusOK {
			c.tally("status", a)
			at.failed(a)
			if !backoff(ctx, n, a) {
				if ctx.Err() == nil {
					c.fail("status %s: %s", id, a.kind())
				}
				return
			}
			continue
		}
		n = 0 // an answer: the next poll is a new call
		c.sawPosition(id, place.Position, place.State == client.StateAdmitted)
		switch {
		case place.State == client.StateAdmitted:
			token = place.AdmissionToken
		case place.Final():
			c.soldOut.Add(1)
			return
		default: // at the node's pace
			if !wait.Sleep(ctx, client.PollDelay(place.PollAfter)) {
				return
			}
		}
	}
	c.admitted.Add(1)
	for k := range c.cfg.Keys {
		if k > 0 && c.cfg.Think > 0 && !wait.Sleep(ctx, time.Duration(rand.Int64N(int64(c.cfg.Think)))) {
			return
		}
		key := fmt.Sprintf("%s-k%d", id, k)
		copies := 1
		if k == 0 && rand.Float64() < c.cfg.TwinShare {
			copies = 2
		}
		final := make([]string, copies)
		routes := make([]*route, copies)
		var wg sync.WaitGroup
		for j := range copies {
			routes[j] = &route{urls: at.urls, i: at.i + j, timeout: at.timeout} // a twin goes to another node when there is one
			wg.Go(func() { final[j] = c.claim(ctx, id, key, token, routes[j]) })
		}
		wg.Wait()
		at.i = routes[0].i // stay where the last answer came from
		if slices.Contains(final, "sold_out") || slices.Contains(final, "limit") || slices.Contains(final, "") {
			return
		}
	}
}

// sawPosition records the position pos a join or status answer gave
// user, if it gave one (0: none yet); admitted says the answer carries
// the user's admission token.
func (c *crowd) sawPosition(user string, pos int64, admitted bool) {
	if pos == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.positions[user], pos) {
		c.positions[user] = append(c.positions[user], pos)
	}
	if _, ok := c.fetched[pos]; admitted && !ok {
		c.fetched[pos] = time.Now()
	}
}

// claim sends one claim until it has a final answer, retrying with the
// same Idempotency-Key. It returns "granted", "limit", "sold_out", or ""
// when it gave up.
func (c *crowd) claim(ctx context.Context, user, key, token string, at *route) string {
	ev := c.cfg.Event
	for n := 1; ; n++ {
		url := at.url()
		var cl client.Claim
		a := c.send(ctx, at.timeout, user, url, func(ctx context.Context, shopper *client.Client) (status int, err error) {
			if cl, err = shopper.Claim(ctx, ev, token, key); cl.Created {
				return http.StatusCreated, err
			}
			return http.StatusOK, err
		})
		if ctx.Err() != nil {
			return ""
		}
		c.tally("claim", a)
		switch {
		case a.status == http.StatusCreated || a.status == http.StatusOK:
			c.acked(ack{ClaimID: cl.ID, User: user, Key: key, Node: url, Status: a.status, At: time.Now()})
			return "granted"
		case a.status == http.StatusConflict && a.code == "limit_reached":
			c.limited.Add(1)
			return "limit"
		case a.status == http.StatusGone:
			c.soldOut.Add(1)
			return "sold_out"
		default:
			at.failed(a)
			if !backoff(ctx, n, a) {
				if ctx.Err() == nil {
					c.fail("claim %s/%s: %s", user, key, a.kind())
				}
				return ""
			}
		}
	}
}
