package crowd

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// HoldConfig describes a crowd that joins one event once and then keeps
// polling its status at the node's pace (client.PollDelay of the
// poll_after_ms answered), until it is admitted or the run ends: the
// million-person queue (loadgen -scenario million). It sends on fasthttp
// for scale and reads every answer with client/'s decoders; joins, polls
// and claims are sent again as client/'s rules say. People are named by
// UserHeader, so the nodes must run in header identity mode trusting
// this machine.
type HoldConfig struct {
	// URLs are the nodes; person i joins and polls URLs[i % len(URLs)].
	URLs []string
	// Event is the sale's id.
	Event string
	// People is how many distinct people join.
	People int
	// UserPrefix makes ids distinct across runs.
	//
	// Default: "h"
	UserPrefix string
	// UserHeader names each person.
	//
	// Default: "X-User-ID"
	UserHeader string
	// Joiners is how many joins are in flight at most.
	//
	// Default: 64
	Joiners int
	// Pollers is how many status polls are in flight at most.
	//
	// Default: 256
	Pollers int
	// Hold is how long people keep polling after the last has joined.
	Hold time.Duration
	// Progress, if set, is called about every second.
	Progress func(HoldStats)

	// Arrivals, when set, makes the joins open loop (the flash crowd,
	// loadgen -scenario flash): person i's join is offered at Arrivals[i]
	// after the start, whether or not earlier joins were answered, by one
	// of Joiners; the instants must not decrease and there must be
	// People of them. A join a joiner picks up more than LateAfter after
	// its instant counts as late offered. Nil: Joiners join everyone as
	// fast as they are answered (the million-person queue).
	Arrivals []time.Duration
	// LateAfter is how late an offered join may be sent and still count
	// as on time.
	//
	// Default: 1s
	LateAfter time.Duration
	// Claim makes an admitted person claim once (with an Idempotency-Key)
	// before leaving, sent again with the same key as client/'s rules say
	// (after a 429 or 503, or no answer).
	Claim bool
	// Until, when set, ends the run once everyone has been offered and it
	// holds (checked every 100 ms), before Hold passes.
	Until func(HoldStats) bool
}

// HoldStats is the crowd at one moment.
type HoldStats struct {
	Elapsed time.Duration
	// Joined counts people with a ticket; Admitted those a status answer
	// admitted (they stop polling); Waiting the rest still polling.
	Joined, Admitted, Waiting int64
	// Polls counts status answers; Late those sent more than a second
	// after their instant (the node's poll_after_ms as client.PollDelay
	// spreads it): the generator falling behind.
	Polls, Late, Errors int64
	// Asked is the status polls per second the server asked the waiting
	// crowd for: the sum of 1/poll_after over everyone waiting.
	Asked float64
	// Offered counts joins offered (first attempts sent), LateOffered
	// those sent more than LateAfter after their instant (open loop only).
	Offered, LateOffered int64
	// Claimed counts claims granted (201 or 200); ClaimSoldOut claims
	// refused as sold out (410) or over the limit (409).
	Claimed, ClaimSoldOut int64
}

// HoldResult is the crowd's account.
type HoldResult struct {
	HoldStats
	// JoinTime is from the first join sent to the last answered.
	JoinTime time.Duration
	// Join and Status are the request latencies the generator measured;
	// Lag is how late each poll was sent against its instant.
	Join, Status, Lag Latency
	// FirstErrors holds a few error descriptions.
	FirstErrors []string
	// Seconds is the run second by second (open loop only): second i
	// covers [i s, i+1 s) after the start.
	Seconds []Second
	// Claims maps each person who claimed to the claim id granted (Claim
	// only).
	Claims map[string]string
	// Positions is each person's queue position as the last join or
	// status answer gave it, 0 when none did (open loop only).
	Positions []uint32
}

// holdRun is one crowd's run; each person's state lives in flat arrays
// indexed by the person's number (a few dozen bytes a person).
type holdRun struct {
	cfg     HoldConfig
	start   time.Time
	clients []*fasthttp.HostClient
	wheel   *wheel

	tickets  []string
	interval []uint32 // ms between polls the server last asked for, 0 once done
	due      []int64  // ns since start the next poll is due

	joined, admitted, polls, late, errs atomic.Int64
	asked                               atomic.Int64 // Σ 1e6/interval: polls per 1000 s
	joinLat, statusLat, lag             hist

	offered, lateOffered, claimed, claimGone atomic.Int64
	seconds                                  []second // open loop only
	positions                                []uint32 // open loop only

	mu        sync.Mutex
	firstErrs []string
	claims    map[string]string
}

// Hold runs the crowd until everyone joined and Hold passed, or ctx is done.
func Hold(ctx context.Context, cfg HoldConfig) (HoldResult, error) {
	if len(cfg.URLs) == 0 || cfg.Event == "" || cfg.People <= 0 || cfg.People > 1<<31 {
		return HoldResult{}, fmt.Errorf("crowd: URLs, Event and People (1 to 2^31) are required")
	}
	cfg.UserPrefix = cmp.Or(cfg.UserPrefix, "h")
	cfg.UserHeader = cmp.Or(cfg.UserHeader, "X-User-ID")
	if cfg.Joiners <= 0 {
		cfg.Joiners = 64
	}
	if cfg.Pollers <= 0 {
		cfg.Pollers = 256
	}
	if cfg.Arrivals != nil && len(cfg.Arrivals) != cfg.People {
		return HoldResult{}, fmt.Errorf("crowd: %d arrivals for %d people", len(cfg.Arrivals), cfg.People)
	}
	if cfg.LateAfter <= 0 {
		cfg.LateAfter = time.Second
	}
	h := &holdRun{cfg: cfg, start: time.Now(), tickets: make([]string, cfg.People),
		interval: make([]uint32, cfg.People), due: make([]int64, cfg.People), claims: map[string]string{}}
	if cfg.Arrivals != nil {
		h.seconds = make([]second, int(cfg.Arrivals[cfg.People-1]/time.Second)+maxTail)
		h.positions = make([]uint32, cfg.People)
	}
	for _, u := range cfg.URLs {
		p, err := url.Parse(u)
		if err != nil || p.Host == "" {
			return HoldResult{}, fmt.Errorf("crowd: bad node URL %q", u)
		}
		h.clients = append(h.clients, &fasthttp.HostClient{Addr: p.Host, MaxConns: cfg.Joiners + cfg.Pollers,
			ReadTimeout: 15 * time.Second, WriteTimeout: 15 * time.Second, MaxIdleConnDuration: time.Minute})
	}
	// Polls are kept in 20 ms slots over 20 minutes: far beyond any
	// poll_after a queue of a few million asks for.
	h.wheel = newWheel(h.start, 20*time.Millisecond, 20*time.Minute)
	var res HoldResult
	var seconds sync.WaitGroup
	stopSeconds := make(chan struct{})
	seconds.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopSeconds:
				return
			case <-t.C:
				if cfg.Progress != nil {
					cfg.Progress(h.stats())
				}
			}
		}
	})
	pctx, stopPolls := context.WithCancel(ctx)
	work := make(chan uint32, 4*cfg.Pollers)
	var polls sync.WaitGroup
	for range cfg.Pollers {
		polls.Go(func() {
			for id := range work {
				h.poll(pctx, id)
			}
		})
	}
	polls.Go(func() { h.dispatch(pctx, work) })
	joinStart := time.Now()
	if cfg.Arrivals != nil {
		h.offerAll(ctx)
	} else {
		h.joinAll(ctx)
	}
	res.JoinTime = time.Since(joinStart)
	h.hold(ctx)
	stopPolls()
	polls.Wait()
	close(stopSeconds)
	seconds.Wait()
	res.HoldStats = h.stats()
	res.Join, res.Status, res.Lag = h.joinLat.summary(), h.statusLat.summary(), h.lag.summary()
	h.mu.Lock()
	res.FirstErrors = h.firstErrs
	if cfg.Claim {
		res.Claims = h.claims
	}
	h.mu.Unlock()
	res.Seconds, res.Positions = h.secondsSoFar(), h.positions
	for _, c := range h.clients {
		c.CloseIdleConnections()
	}
	return res, ctx.Err()
}

func (h *holdRun) stats() HoldStats {
	j, a := h.joined.Load(), h.admitted.Load()
	return HoldStats{Elapsed: time.Since(h.start), Joined: j, Admitted: a, Waiting: j - a,
		Polls: h.polls.Load(), Late: h.late.Load(), Errors: h.errs.Load(), Asked: float64(h.asked.Load()) / 1000,
		Offered: h.offered.Load(), LateOffered: h.lateOffered.Load(), Claimed: h.claimed.Load(), ClaimSoldOut: h.claimGone.Load()}
}

// hold keeps the crowd polling for Hold after the last join, or until
// Until holds, or ctx ends.
func (h *holdRun) hold(ctx context.Context) {
	end := time.NewTimer(h.cfg.Hold)
	defer end.Stop()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if h.cfg.Until != nil && h.cfg.Until(h.stats()) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-end.C:
			return
		case <-t.C:
		}
	}
}

// dispatch hands every due poll to the pollers until ctx is done; it
// closes work on its way out.
func (h *holdRun) dispatch(ctx context.Context, work chan<- uint32) {
	defer close(work)
	t := time.NewTicker(h.wheel.tick)
	defer t.Stop()
	var due []uint32
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			due = h.wheel.due(now, due[:0])
			for _, id := range due {
				select {
				case work <- id:
				case <-ctx.Done():
					return
				}
			}
		}
	}
}

func (h *holdRun) fail(format string, a ...any) {
	h.errs.Add(1)
	h.mu.Lock()
	if len(h.firstErrs) < 10 {
		h.firstErrs = append(h.firstErrs, fmt.Sprintf(format, a...))
	}
	h.mu.Unlock()
}
