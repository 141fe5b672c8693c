package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/anteroom/anteroom/internal/crowd"
	"github.com/anteroom/anteroom/internal/procstat"
	"github.com/redis/go-redis/v9"
)

// millionOpts are loadgen's flags as -scenario million reads them.
type millionOpts struct {
	urls             []string
	metricsURLs      []string // the nodes' metrics listeners; none: no server-side figures
	event, admin     string
	redisURL         string
	people           int
	rate             float64
	hold             time.Duration
	joinShards       int
	joiners, pollers int
	nodePIDs         []int
	redisPIDs        []int
	spawn            bool
	nodes            int
	userHeader       string
	progressEvery    time.Duration
}

// millionReport is what the scenario measured.
type millionReport struct {
	opts                 millionOpts
	crowd                crowd.HoldResult
	elapsed              time.Duration
	memBefore, memAfter  int64
	serverP99            time.Duration
	serverCount          float64
	samples              []millionSample
	nodeCPU, redisCPU    time.Duration
	selfCPU              time.Duration
	machineBusy, machine time.Duration
	load                 string
}

// millionSample is the sale and the machine at one instant of the run.
type millionSample struct {
	at       time.Duration
	admitted float64 // anteroom_admitted_total of node A
	joined   int64
	polls    int64
	asked    float64
	nodeCPU  time.Duration
}

// runMillion runs the million-person scenario: people join one event
// spread over the nodes, then keep polling at the poll_after_ms they are
// told while the sale admits at the configured rate.
func runMillion(ctx context.Context, o millionOpts, stdout, stderr io.Writer) (millionReport, error) {
	rep := millionReport{opts: o}
	raiseFileLimit()
	if o.spawn {
		st, err := startMillionStack(ctx, o.nodes, 1)
		if st != nil {
			defer st.stop()
		}
		if err != nil {
			return rep, err
		}
		o.urls, o.metricsURLs, o.redisURL, o.admin, o.nodePIDs, o.redisPIDs = st.urls, st.metricsURLs, st.redisURL, st.admin, st.nodePIDs, st.redisPIDs
		fmt.Fprintf(stdout, "million: redis-server, natsd and %d nodes started: %v\n", len(st.urls), st.urls)
	}
	rep.opts = o
	opt, err := redis.ParseURL(o.redisURL)
	if err != nil {
		return rep, fmt.Errorf("-scenario million needs -redis-url (or -spawn): %w", err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	now := time.Now().UTC().Truncate(time.Second)
	if err := putEvent(ctx, o.urls[0], o.admin, o.event, map[string]any{
		"name": "million " + o.event, "supply": o.people, "per_user_limit": 1, "join_shards": o.joinShards,
		"prequeue_opens_at": now.Add(-time.Minute), "starts_at": now.Add(-time.Second), "ends_at": now.Add(2 * time.Hour),
		"random_window_seconds": 0, "admit_rate_per_second": o.rate,
		"limits": map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}},
	}); err != nil {
		return rep, err
	}
	for _, u := range o.urls {
		if err := waitForEvent(ctx, u, o.event); err != nil {
			return rep, err
		}
	}
	if rep.memBefore, err = usedMemory(ctx, rdb); err != nil {
		return rep, err
	}
	histBefore, _ := scrapeStatusHist(ctx, o.metricsURLs)
	cpu0, redis0, self0 := rep.cpu()
	busy0, total0 := procstat.Machine()
	start := time.Now()
	var last time.Time
	res, err := crowd.Hold(ctx, crowd.HoldConfig{
		URLs: o.urls, Event: o.event, People: o.people, UserHeader: o.userHeader,
		UserPrefix: fmt.Sprintf("m%d-", time.Now().UnixNano()%1e6), Joiners: o.joiners, Pollers: o.pollers, Hold: o.hold,
		Progress: func(s crowd.HoldStats) {
			if time.Since(last) < o.progressEvery {
				return
			}
			last = time.Now()
			c, _, _ := rep.cpu()
			adm, _ := scrapeSale(ctx, o.metricsURLs, o.event, "anteroom_admitted_total")
			rep.samples = append(rep.samples, millionSample{at: s.Elapsed, admitted: adm, joined: s.Joined, polls: s.Polls, asked: s.Asked, nodeCPU: c - cpu0})
			fmt.Fprintf(stdout, "  %4.0fs joined %8d waiting %8d admitted %7.0f (server) polls %9d asked %7.0f/s late>1s %d errors %d\n",
				s.Elapsed.Seconds(), s.Joined, s.Waiting, adm, s.Polls, s.Asked, s.Late, s.Errors)
		},
	})
	rep.crowd, rep.elapsed = res, time.Since(start)
	if err != nil {
		fmt.Fprintf(stderr, "million: the crowd stopped early: %v\n", err)
		ctx = context.WithoutCancel(ctx)
	}
	cpu1, redis1, self1 := rep.cpu()
	rep.nodeCPU, rep.redisCPU, rep.selfCPU = cpu1-cpu0, redis1-redis0, self1-self0
	busy1, total1 := procstat.Machine()
	rep.machineBusy, rep.machine = busy1-busy0, total1-total0
	if raw, lerr := os.ReadFile("/proc/loadavg"); lerr == nil {
		rep.load = string(raw[:len(raw)-1])
	}
	if histAfter, herr := scrapeStatusHist(ctx, o.metricsURLs); herr == nil {
		rep.serverP99, rep.serverCount = histAfter.quantileSince(histBefore, 0.99)
	}
	if rep.memAfter, err = usedMemory(ctx, rdb); err != nil {
		return rep, err
	}
	if len(res.FirstErrors) > 0 {
		fmt.Fprintf(stderr, "million: first errors: %v\n", res.FirstErrors)
	}
	return rep, nil
}

// cpu is the CPU time the nodes, redis-server and this process have used.
func (r *millionReport) cpu() (nodes, redis, self time.Duration) {
	for _, p := range r.opts.nodePIDs {
		nodes += procstat.CPU(p)
	}
	return nodes, pidsCPU(r.opts.redisPIDs), procstat.CPU(os.Getpid())
}

// pidsCPU is the CPU time processes pids have used together.
func pidsCPU(pids []int) time.Duration {
	var d time.Duration
	for _, p := range pids {
		d += procstat.CPU(p)
	}
	return d
}

// raiseFileLimit lifts this process's open-file limit to its hard limit:
// the nodes it spawns inherit it.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}
