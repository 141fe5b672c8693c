// Package crowd simulates shoppers against anteroom's public HTTP API
// through the Go client (client/), so the demo, the load generator, the
// drills and the integration tests exercise the client's rules — how an
// answer is read, when a call is sent again and how long to wait, the
// node's poll pace — over real sockets. Run plays a crowd of shoppers,
// each a client.Client: it joins, polls at the node's pace, claims once
// admitted (retried with the same Idempotency-Key), or abandons. Hold
// plays the million-person queue and the flash crowd on fasthttp for
// scale, reading every answer with the client's decoders and following
// its retry and pace rules.
//
// Exchange, Answer and Backoff serve the crowds that account for every
// sending themselves: Exchange sends one request once and decodes its
// answer (status, problem code, Retry-After, the fields of a join, status
// or claim answer) with the client's decoders — the soak (bench/soak)
// reads every answer through it, the drills (bench/drills) their lookups
// — and Backoff is the client's retry rule as a wait, which the drills
// follow. Each of those crowds keeps its own plan and account of what it
// was told.
package crowd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/internal/wait"
)

// Config describes one crowd.
type Config struct {
	// URLs are anteroom nodes; users are spread over them round-robin.
	URLs []string
	// Event is the sale's id.
	Event string
	// Users is how many people join.
	Users int
	// UserHeader, when set, names each user by their id in this header
	// (X-User-ID for a node in header mode): the crowd then stands in for
	// the shop's gateway, and the nodes must trust its address as a
	// proxy. Empty: each user keeps its own cookie jar and is named by the
	// node's visitor cookie (anonymous mode, the default).
	UserHeader string
	// UserPrefix makes user ids distinct across crowds.
	//
	// Default: "u"
	UserPrefix string
	// Abandon is the share of users who leave right after joining.
	Abandon float64
	// Concurrency bounds requests in flight.
	//
	// Default: 256
	Concurrency int
	// ArrivalSpread spreads the users' first join over this long.
	ArrivalSpread time.Duration
	// Replays is how many extra identical claim requests an admitted user
	// fires at once with the same Idempotency-Key (0: one request).
	Replays int
	// ReplayShare is the share of admitted users who fire Replays.
	ReplayShare float64
	// Progress, if set, is called about every 200ms with a snapshot.
	Progress func(Stats)
}

// Stats counts what happened to the crowd. Claims maps user → granted
// claim ids (distinct).
type Stats struct {
	Users, Joined, Abandoned, Admitted      int64
	Granted, SoldOut, NotSelected, Limited  int64
	Closed, Errors, Replays, ReplayMismatch int64
	Requests                                int64
	Done                                    int64
}

type counters struct {
	users, joined, abandoned, admitted     atomic.Int64
	granted, soldOut, notSelected, limited atomic.Int64
	closed, errors, replays, mismatch      atomic.Int64
	requests, done                         atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Users: c.users.Load(), Joined: c.joined.Load(), Abandoned: c.abandoned.Load(), Admitted: c.admitted.Load(),
		Granted: c.granted.Load(), SoldOut: c.soldOut.Load(), NotSelected: c.notSelected.Load(), Limited: c.limited.Load(),
		Closed: c.closed.Load(), Errors: c.errors.Load(), Replays: c.replays.Load(), ReplayMismatch: c.mismatch.Load(),
		Requests: c.requests.Load(), Done: c.done.Load(),
	}
}

// Result is the crowd's final account.
type Result struct {
	Stats
	// Claims maps each user to the claim ids they were granted.
	Claims map[string][]string
	// FirstErrors holds a few error descriptions for diagnosis.
	FirstErrors []string
	// Endpoints summarises latency and throughput per endpoint (join,
	// status, claim).
	Endpoints map[string]Endpoint
	Elapsed   time.Duration
}

// Run simulates the crowd until every user has finished or ctx is done.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.URLs) == 0 || cfg.Event == "" || cfg.Users <= 0 {
		return Result{}, fmt.Errorf("crowd: URLs, Event and Users are required")
	}
	if cfg.UserPrefix == "" {
		cfg.UserPrefix = "u"
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 256
	}
	r := &runner{cfg: cfg, sem: make(chan struct{}, cfg.Concurrency), claims: map[string][]string{}}
	transport := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        cfg.Concurrency * 2,
		MaxIdleConnsPerHost: cfg.Concurrency * 2,
		IdleConnTimeout:     30 * time.Second,
	}
	defer transport.CloseIdleConnections()
	r.hc = &http.Client{Transport: &meter{next: transport, r: r, timeout: 15 * time.Second}}
	start := time.Now()
	stopProgress := make(chan struct{})
	var pwg sync.WaitGroup
	if cfg.Progress != nil {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case <-t.C:
					cfg.Progress(r.c.snapshot())
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for i := range cfg.Users {
		wg.Add(1)
		delay := time.Duration(0)
		if cfg.ArrivalSpread > 0 {
			delay = time.Duration(rand.Int64N(int64(cfg.ArrivalSpread)))
		}
		go func() {
			defer wg.Done()
			defer r.c.done.Add(1)
			r.c.users.Add(1)
			if !wait.Sleep(ctx, delay) {
				return
			}
			r.user(ctx, fmt.Sprintf("%s%d", cfg.UserPrefix, i), cfg.URLs[i%len(cfg.URLs)])
		}()
	}
	wg.Wait()
	close(stopProgress)
	pwg.Wait()
	elapsed := time.Since(start)
	res := Result{Stats: r.c.snapshot(), Claims: r.claims, FirstErrors: r.firstErrs, Elapsed: elapsed, Endpoints: r.lat.summary(elapsed)}
	if cfg.Progress != nil {
		cfg.Progress(res.Stats)
	}
	return res, ctx.Err()
}
