package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/crowd"
	"github.com/anteroom/anteroom/internal/procstat"
	"github.com/anteroom/anteroom/internal/profparts"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// flashOpts are loadgen's flags as -scenario flash reads them.
type flashOpts struct {
	urls             []string
	metricsURLs      []string // the nodes' metrics listeners; none: no server-side figures
	event, admin     string
	redisURL         string
	clusterAddrs     []string
	natsURL          string
	people           int
	units            int64
	rate             float64
	joinShards       int
	curve            arrivalCurve
	seed             uint64
	joiners, pollers int
	nodePIDs         []int
	redisPIDs        []int
	spawn            bool
	nodes, masters   int
	userHeader       string
	hold             time.Duration
	// profile, with spawn: a CPU profile of the first node from
	// profileAt after the crowd starts, for profileFor, saved here.
	profile               string
	profileAt, profileFor time.Duration
}

// arrivalCurve is when a flash crowd arrives. Share of it has the sale's
// room page open at the start: each page learns the sale opened at its
// next refresh of the event, which room.js makes every Refresh with ±20 %
// jitter (jit(4000, 0.2)), so that part arrives spread evenly over the
// first 0.8–1.2 Refresh. The rest arrive after, exponentially fewer,
// with a mean delay of Tail and none later than 3 Tail (the crowd that
// follows a link to a sale that has begun). Stretch multiplies every instant: a machine
// that cannot offer the real curve runs the same shape slower.
type arrivalCurve struct {
	Share   float64
	Refresh time.Duration
	Tail    time.Duration
	Stretch float64
}

// instants are n arrival instants of the curve, drawn with seed, sorted.
func (c arrivalCurve) instants(n int, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0x666c617368))
	out := make([]time.Duration, n)
	for i := range out {
		var t float64
		if rng.Float64() < c.Share {
			period := float64(c.Refresh) * (0.8 + 0.4*rng.Float64())
			t = period * rng.Float64()
		} else {
			for t = math.Inf(1); t > 3*float64(c.Tail); {
				t = float64(c.Tail) * rng.ExpFloat64()
			}
		}
		out[i] = time.Duration(t * c.Stretch)
	}
	slices.Sort(out)
	return out
}

func (c arrivalCurve) String() string {
	return fmt.Sprintf("%.0f%% on the page, arriving over their next refresh (%s ±20%%), the rest with a mean delay of %s (at most %s); stretched ×%g",
		100*c.Share, c.Refresh, c.Tail, 3*c.Tail, c.Stretch)
}

// flashSample is the nodes and Redis over the span before instant at:
// about a second (the crowd reports every second; longer when reading the
// nodes' metrics takes a while on a busy machine).
type flashSample struct {
	at, span          time.Duration
	joinP50, joinP99  time.Duration // the nodes' own join histogram over the second
	joins             float64       // joins the nodes' histogram counted in the second
	nodeCPU, redisCPU time.Duration // used in the second
	soldOut           bool
}

// nodeCores and redisCores are the cores the nodes and Redis used over
// the sample's span.
func (s flashSample) nodeCores() float64  { return s.nodeCPU.Seconds() / max(s.span.Seconds(), 1e-9) }
func (s flashSample) redisCores() float64 { return s.redisCPU.Seconds() / max(s.span.Seconds(), 1e-9) }

// flashReport is what the scenario measured and checked.
type flashReport struct {
	opts                  flashOpts
	crowd                 crowd.HoldResult
	arrivals              []time.Duration
	samples               []flashSample
	elapsed               time.Duration
	memBefore, memAfter   int64
	nodeCPU, redisCPU     time.Duration
	selfCPU               time.Duration
	machineBusy, machine  time.Duration
	load                  string
	serverJoined          float64 // anteroom_queue_joined_total
	soldOut               bool    // anteroom_sale_sold_out
	positions             positionCheck
	balance               report
	balanceErr            error
	offeredSum, secondsOK int64
	prof                  flashProfile
}

// flashProfile is the first node's CPU profile over part of the run
// (-profile): what it cost by kind of request and by part of the work
// (package internal/profparts).
type flashProfile struct {
	path, bin  string
	from, span time.Duration
	kinds      []profparts.Share
	parts      []profparts.Share
	err        error
}

// positionCheck is what the crowd was told of its positions.
type positionCheck struct {
	known, distinct, outside int
}

// bijection reports whether everyone was told a position and the
// positions are 1..people, each once.
func (p positionCheck) bijection(people int) bool {
	return p.known == people && p.distinct == people && p.outside == 0
}

// consistent reports whether the positions told are distinct and within
// 1..people. With join shards a joiner's position is known only once the
// arrival second of their join has closed on every shard, so a person
// who joined a sold-out sale (and never polled) may never be told theirs.
func (p positionCheck) consistent() bool { return p.distinct == p.known && p.outside == 0 }

// runFlash runs the flash crowd: People arrive on the curve, each joins
// once (open loop: on their instant, not when an earlier join is
// answered), polls at the poll_after_ms the server asks for, claims once
// when admitted and leaves. It ends when everyone has been offered and
// the sale has sold out (or Hold after the last arrival), then checks the
// sale against Redis and the order stream.
func runFlash(ctx context.Context, o flashOpts, stdout, stderr io.Writer) (flashReport, error) {
	rep := flashReport{opts: o}
	raiseFileLimit()
	var pprofAddr string
	if o.profile != "" && !o.spawn {
		return rep, fmt.Errorf("-profile needs -spawn (the nodes it starts serve their profiles on loopback)")
	}
	if o.spawn {
		st, err := startMillionStack(ctx, o.nodes, o.masters)
		if st != nil {
			defer st.stop()
		}
		if err != nil {
			return rep, err
		}
		o.urls, o.metricsURLs, o.redisURL, o.clusterAddrs, o.natsURL = st.urls, st.metricsURLs, st.redisURL, st.clusterAddrs, st.natsURL
		o.admin, o.nodePIDs, o.redisPIDs = st.admin, st.nodePIDs, st.redisPIDs
		if o.profile != "" {
			rep.prof = flashProfile{path: o.profile, bin: st.bin, from: o.profileAt, span: o.profileFor}
			pprofAddr = st.pprofAddrs[0]
		}
		fmt.Fprintf(stdout, "flash: %d redis-server (cluster: %v), natsd and %d nodes started: %v\n", len(st.redisPIDs), len(st.clusterAddrs) > 0, len(st.urls), st.urls)
	}
	rep.opts = o
	var rdb redis.UniversalClient
	if len(o.clusterAddrs) > 0 {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: o.clusterAddrs})
	} else {
		opt, err := redis.ParseURL(o.redisURL)
		if err != nil {
			return rep, fmt.Errorf("-scenario flash needs -redis-url or -redis-cluster-addrs (or -spawn): %w", err)
		}
		rdb = redis.NewClient(opt)
	}
	defer rdb.Close()
	nc, err := nats.Connect(o.natsURL)
	if err != nil {
		return rep, fmt.Errorf("-scenario flash needs -nats-url (or -spawn): %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return rep, err
	}
	t0 := time.Now()
	rep.arrivals = o.curve.instants(o.people, o.seed)
	fmt.Fprintf(stdout, "flash: %d arrival instants drawn in %s: half by %s, 90%% by %s, the last at %s\n", o.people, time.Since(t0).Round(time.Millisecond),
		rep.arrivals[o.people/2].Round(time.Millisecond), rep.arrivals[o.people*9/10].Round(time.Millisecond), rep.arrivals[o.people-1].Round(time.Millisecond))
	now := time.Now().UTC().Truncate(time.Second)
	if err := putEvent(ctx, o.urls[0], o.admin, o.event, map[string]any{
		"name": "flash " + o.event, "supply": o.units, "per_user_limit": 1, "join_shards": o.joinShards,
		"prequeue_opens_at": now.Add(-time.Minute), "starts_at": now.Add(-time.Second), "ends_at": now.Add(6 * time.Hour),
		"random_window_seconds": 0, "admit_rate_per_second": o.rate, "claim_ttl_seconds": 7200,
		"limits": map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}},
	}); err != nil {
		return rep, err
	}
	for _, u := range o.urls {
		if err := waitForEvent(ctx, u, o.event); err != nil {
			return rep, err
		}
	}
	if rep.memBefore, err = usedMemoryAll(ctx, rdb); err != nil {
		return rep, err
	}
	hist0, _ := scrapeHist(ctx, o.metricsURLs, "POST", "/events/:id/join")
	node0, redis0, self0 := pidsCPU(o.nodePIDs), pidsCPU(o.redisPIDs), procstat.CPU(os.Getpid())
	busy0, total0 := procstat.Machine()
	prevHist, prevNode, prevRedis := hist0, node0, redis0
	var soldOut atomic.Bool
	start := time.Now()
	profiled := make(chan error, 1)
	if pprofAddr != "" {
		go func() { profiled <- rep.prof.take(ctx, pprofAddr) }()
	}
	prevAt := time.Duration(0)
	res, err := crowd.Hold(ctx, crowd.HoldConfig{
		URLs: o.urls, Event: o.event, People: o.people, UserHeader: o.userHeader,
		UserPrefix: fmt.Sprintf("f%d-", time.Now().UnixNano()%1e6), Joiners: o.joiners, Pollers: o.pollers, Hold: o.hold,
		Arrivals: rep.arrivals, Claim: true,
		Until: func(s crowd.HoldStats) bool {
			return s.Offered == int64(o.people) && s.Joined+s.Errors >= int64(o.people) && (soldOut.Load() || s.Claimed >= o.units)
		},
		Progress: func(s crowd.HoldStats) {
			h, _ := scrapeHist(ctx, o.metricsURLs, "POST", "/events/:id/join")
			n, r := pidsCPU(o.nodePIDs), pidsCPU(o.redisPIDs)
			so, _ := scrapeSale(ctx, o.metricsURLs, o.event, "anteroom_sale_sold_out")
			p50, _ := h.quantileSince(prevHist, 0.5)
			p99, cnt := h.quantileSince(prevHist, 0.99)
			at := time.Since(start)
			smp := flashSample{at: at, span: at - prevAt, joinP50: p50, joinP99: p99, joins: cnt, nodeCPU: n - prevNode, redisCPU: r - prevRedis, soldOut: so == 1}
			prevHist, prevNode, prevRedis, prevAt = h, n, r, at
			if smp.soldOut {
				soldOut.Store(true)
			}
			rep.samples = append(rep.samples, smp)
			fmt.Fprintf(stdout, "  %4.0fs joined %8d of %d offered (late %d), waiting %8d, claimed %5d/%d, polls %9d, errors %d, node %.2f cores, redis %.2f cores%s\n",
				s.Elapsed.Seconds(), s.Joined, s.Offered, s.LateOffered, s.Waiting, s.Claimed, o.units, s.Polls, s.Errors,
				smp.nodeCores(), smp.redisCores(), map[bool]string{true: ", sold out"}[smp.soldOut])
		},
	})
	rep.crowd, rep.elapsed = res, time.Since(start)
	if pprofAddr != "" {
		if rep.prof.err = <-profiled; rep.prof.err == nil {
			rep.prof.analyse()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "flash: the crowd stopped early: %v\n", err)
		ctx = context.WithoutCancel(ctx)
	}
	node1, redis1, self1 := pidsCPU(o.nodePIDs), pidsCPU(o.redisPIDs), procstat.CPU(os.Getpid())
	rep.nodeCPU, rep.redisCPU, rep.selfCPU = node1-node0, redis1-redis0, self1-self0
	busy1, total1 := procstat.Machine()
	rep.machineBusy, rep.machine = busy1-busy0, total1-total0
	if raw, lerr := os.ReadFile("/proc/loadavg"); lerr == nil {
		rep.load = strings.TrimSpace(string(raw))
	}
	if rep.memAfter, err = usedMemoryAll(ctx, rdb); err != nil {
		return rep, err
	}
	// The nodes' figures come from their view of the sale, refreshed
	// every tick: the last joins show within a few.
	_ = wait.Until(10*time.Second, 100*time.Millisecond, func() error {
		rep.serverJoined, _ = scrapeSale(ctx, o.metricsURLs, o.event, "anteroom_queue_joined_total")
		so, _ := scrapeSale(ctx, o.metricsURLs, o.event, "anteroom_sale_sold_out")
		rep.soldOut = so == 1
		if rep.serverJoined < float64(res.Joined) || !rep.soldOut {
			return fmt.Errorf("the nodes count %.0f joined, sold out %v", rep.serverJoined, rep.soldOut)
		}
		return nil
	})
	rep.positions = checkPositions(res.Positions, o.people)
	for _, s := range res.Seconds {
		rep.offeredSum += s.Offered
		rep.secondsOK += s.OK
	}
	claims := make(map[string][]string, len(res.Claims))
	for u, id := range res.Claims {
		claims[u] = []string{id}
	}
	rep.balance, rep.balanceErr = reconcileWith(ctx, claim.NewStore(rdb), js, claim.Sale{ID: o.event, Buckets: 1}, o.units, crowd.Result{
		Stats:  crowd.Stats{Users: int64(o.people), Joined: res.Joined, Admitted: res.Admitted, Granted: res.Claimed, Errors: res.Errors},
		Claims: claims, FirstErrors: res.FirstErrors, Elapsed: rep.elapsed,
	})
	if len(res.FirstErrors) > 0 {
		fmt.Fprintf(stderr, "flash: first errors: %v\n", res.FirstErrors)
	}
	return rep, nil
}

// checkPositions counts the positions the crowd was told: how many people
// know theirs, how many distinct, how many outside 1..people.
func checkPositions(pos []uint32, people int) positionCheck {
	var c positionCheck
	seen := make([]bool, people+1)
	for _, p := range pos {
		switch {
		case p == 0:
			continue
		case int(p) > people:
			c.outside++
		case !seen[p]:
			seen[p] = true
			c.distinct++
		}
		c.known++
	}
	return c
}

// usedMemoryAll is Redis's used_memory, summed over every master of a
// cluster.
func usedMemoryAll(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return usedMemory(ctx, rdb.(*redis.Client))
	}
	var sum int64
	var mu sync.Mutex
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		m, err := usedMemory(ctx, c)
		mu.Lock()
		sum += m
		mu.Unlock()
		return err
	})
	return sum, err
}

// ok reports whether the run did everything it must: every person joined
// exactly once, the positions told distinct and within 1..people (a
// bijection without join shards, where everyone is told one), the sale sold out with every
// unit granted once, the report and the stream balanced, and the
// per-second table accounting for every person offered.
func (r *flashReport) ok() bool {
	c, n := r.crowd, int64(r.opts.people)
	return c.Joined == n && c.Errors == 0 && int64(r.serverJoined) == n && r.positions.consistent() && (r.opts.joinShards > 1 || r.positions.bijection(r.opts.people)) &&
		r.soldOut && r.balanceErr == nil && r.balance.balanced() && r.balance.redisGranted == r.opts.units &&
		r.offeredSum == n && r.secondsOK == n
}

// take waits until p.from after now, then saves the CPU profile of the
// node serving its profiles at addr over p.span to p.path. The crowd may
// end first: the profile then covers what is left of the span.
func (p *flashProfile) take(ctx context.Context, addr string) error {
	select {
	case <-time.After(p.from):
	case <-ctx.Done():
		return ctx.Err()
	}
	return profparts.Fetch(ctx, addr, p.span, p.path)
}

// analyse breaks the saved profile down by kind of request and by part
// (go tool pprof, from the Go toolchain).
func (p *flashProfile) analyse() {
	traces, err := profparts.Traces(p.bin, p.path)
	if err != nil {
		p.err = err
		return
	}
	p.kinds = profparts.Shares(traces, profparts.Kind, false)
	p.parts = profparts.Shares(traces, profparts.Request, true)
	if p.kinds == nil {
		p.err = fmt.Errorf("no samples in %s", p.path)
	}
}
