package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/crowd"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// loadgen simulates a crowd against running nodes, reports per-endpoint
// throughput and latency, and reconciles against Redis and the order
// stream when it can reach them.
func loadgen(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	urls := fs.String("url", "http://127.0.0.1:8080", "comma-separated node base URLs")
	metricsURLs := fs.String("metrics-url", "", "with -scenario million or flash and -url: comma-separated base URLs of the nodes' metrics listeners (ANTEROOM_METRICS_ADDR), in the order of -url, for the server-side figures; empty: none")
	ev := fs.String("event", "", "event id (created first with -create)")
	users := fs.Int("users", 10000, "simulated shoppers")
	abandon := fs.Float64("abandon", 0.1, "share who leave after joining")
	conc := fs.Int("concurrency", 256, "requests in flight at most")
	spread := fs.Duration("arrival", 2*time.Second, "spread of first arrivals")
	limit := fs.Duration("duration", 2*time.Minute, "stop after this long")
	create := fs.Bool("create", false, "create the event through the admin API first")
	units := fs.Int64("units", 1000, "units for sale (with -create)")
	rate := fs.Float64("rate", 2000, "admissions per second (with -create)")
	perUser := fs.Int64("per-user", 1, "per-user limit (with -create)")
	buckets := fs.Int("buckets", 1, "stock buckets (with -create)")
	joinShards := fs.Int("join-shards", 1, "join shards S (with -create): one event's joins over S Redis Cluster slots")
	userHeader := fs.String("user-header", "", "name each shopper by this header (X-User-ID for nodes in header mode that trust this machine as a proxy); empty: by the visitor cookie (anonymous mode)")
	admin := envFlag(fs, getenv, "admin-token", "admin token (default: ANTEROOM_ADMIN_TOKEN)")
	redisURL := envFlag(fs, getenv, "redis-url", "Redis to reconcile against (default: ANTEROOM_REDIS_URL)")
	cluster := envFlag(fs, getenv, "redis-cluster-addrs", "Redis Cluster to reconcile against (default: ANTEROOM_REDIS_CLUSTER_ADDRS)")
	natsURL := envFlag(fs, getenv, "nats-url", "NATS to reconcile against (default: ANTEROOM_NATS_URL)")
	scenario := fs.String("scenario", "", "million: -users people join one new event and keep polling at the poll_after_ms they are told for -duration after the last join, admitted at -rate; reports status p99, admissions/s, Redis memory per person and CPU. "+
		"flash: -users people arrive open loop on a start-of-sale curve (-arrival-*), join once, poll at the server's pace, claim once admitted, until -units are sold out (or -duration after the last arrival); reports second by second and reconciles")
	spawn := fs.Bool("spawn", false, "with -scenario million or flash: start redis-server, anteroom natsd and -nodes nodes on loopback (header identity) instead of using -url")
	masters := fs.Int("masters", 1, "with -spawn: Redis Cluster masters (1: one redis-server)")
	share := fs.Float64("arrival-share", 0.8, "with -scenario flash: share of the crowd with the room page open at the start, arriving over its next refresh")
	refresh := fs.Duration("arrival-refresh", 4*time.Second, "with -scenario flash: the page's event refresh (room.js: 4 s, jittered ±20 %)")
	tail := fs.Duration("arrival-tail", 4*time.Second, "with -scenario flash: the mean delay of the rest of the crowd (none later than 3 times it)")
	stretch := fs.Float64("stretch", 1, "with -scenario flash: multiply every arrival instant (the same curve, slower, for a machine that cannot offer it in real time)")
	seed := fs.Uint64("seed", 1, "with -scenario flash: the arrival curve's random seed")
	full := fs.Bool("per-second", true, "with -scenario flash: print the whole per-second table")
	nodes := fs.Int("nodes", 2, "nodes -spawn starts")
	pids := fs.String("node-pids", "", "with -scenario million and -url: comma-separated pids of the nodes, for their CPU")
	profile := fs.String("profile", "", "with -scenario flash and -spawn: save a CPU profile of the first node here, and report its breakdown by kind of request and by part of the work (go tool pprof)")
	profileAt := fs.Duration("profile-at", 30*time.Second, "with -profile: when the profile starts, after the crowd does")
	profileFor := fs.Duration("profile-for", time.Minute, "with -profile: how long it lasts")
	joiners := fs.Int("joiners", 64, "with -scenario million: joins in flight at most (-concurrency bounds the status polls in flight)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *scenario == "flash" {
		o := flashOpts{urls: strings.Split(*urls, ","), metricsURLs: splitList(*metricsURLs), event: *ev, admin: admin(), redisURL: redisURL(), natsURL: natsURL(),
			people: *users, units: *units, rate: *rate, joinShards: *joinShards, seed: *seed,
			curve:   arrivalCurve{Share: *share, Refresh: *refresh, Tail: *tail, Stretch: *stretch},
			joiners: *joiners, pollers: *conc, spawn: *spawn, nodes: *nodes, masters: *masters,
			userHeader: cmp.Or(*userHeader, "X-User-ID"), hold: *limit,
			profile: *profile, profileAt: *profileAt, profileFor: *profileFor}
		if cluster() != "" {
			o.clusterAddrs = strings.Split(cluster(), ",")
		}
		o.nodePIDs = parsePIDs(*pids)
		if o.event == "" {
			o.event = fmt.Sprintf("flash-%d", time.Now().Unix())
		}
		rep, err := runFlash(ctx, o, stdout, stderr)
		if err != nil {
			return err
		}
		rep.print(stdout, *full)
		if !rep.ok() {
			return fmt.Errorf("flash: the run does not check out")
		}
		return nil
	}
	if *scenario == "million" {
		o := millionOpts{urls: strings.Split(*urls, ","), metricsURLs: splitList(*metricsURLs), event: *ev, admin: admin(), redisURL: redisURL(), people: *users,
			rate: *rate, hold: *limit, joinShards: *joinShards, joiners: *joiners, pollers: *conc, spawn: *spawn, nodes: *nodes,
			userHeader: cmp.Or(*userHeader, "X-User-ID"), progressEvery: 5 * time.Second}
		o.nodePIDs = parsePIDs(*pids)
		if o.event == "" {
			o.event = fmt.Sprintf("million-%d", time.Now().Unix())
		}
		rep, err := runMillion(ctx, o, stdout, stderr)
		if err != nil {
			return err
		}
		rep.print(stdout)
		return nil
	} else if *scenario != "" {
		return fmt.Errorf("unknown -scenario %q (million, flash)", *scenario)
	}
	if *ev == "" {
		return fmt.Errorf("loadgen needs -event")
	}
	targets := strings.Split(*urls, ",")
	if *create {
		now := time.Now().UTC().Truncate(time.Second)
		if err := putEvent(ctx, targets[0], admin(), *ev, map[string]any{
			"name": "loadgen " + *ev, "supply": *units, "per_user_limit": *perUser, "buckets": *buckets, "join_shards": *joinShards,
			"prequeue_opens_at": now.Add(time.Second), "starts_at": now.Add(3 * time.Second),
			"ends_at": now.Add(time.Hour), "random_window_seconds": 1, "admit_rate_per_second": *rate,
			// The generated crowd comes from this one machine: no per-IP
			// join budget (on by default where visitors are anonymous).
			"limits": map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}},
		}); err != nil {
			return err
		}
	}
	// Every node must serve the event before the crowd arrives: a node
	// learns of a new event on its next refresh.
	for _, u := range targets {
		if err := waitForEvent(ctx, u, *ev); err != nil {
			return err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, *limit)
	defer cancel()
	res, err := crowd.Run(cctx, crowd.Config{
		URLs: targets, Event: *ev, Users: *users, UserHeader: *userHeader, Abandon: *abandon, Concurrency: *conc,
		ArrivalSpread: *spread, Replays: 2, ReplayShare: 0.05,
		UserPrefix: fmt.Sprintf("lg%d-", time.Now().UnixNano()%1e6),
		Progress:   func(s crowd.Stats) { progress(stdout, s, *units) },
	})
	fmt.Fprintln(stdout)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: crowd stopped early: %v\n", err)
	}
	printEndpoints(stdout, res)
	if redisURL() == "" && cluster() == "" || natsURL() == "" {
		fmt.Fprintln(stdout, "\n(no -redis-url/-redis-cluster-addrs and -nats-url: skipping reconciliation against Redis and the stream)")
		return err
	}
	var rdb redis.UniversalClient
	if cluster() != "" {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(cluster(), ",")})
	} else {
		opt, perr := redis.ParseURL(redisURL())
		if perr != nil {
			return perr
		}
		rdb = redis.NewClient(opt)
	}
	defer rdb.Close()
	nc, cerr := nats.Connect(natsURL())
	if cerr != nil {
		return cerr
	}
	defer nc.Close()
	js, jerr := jetstream.New(nc)
	if jerr != nil {
		return jerr
	}
	rep, rerr := reconcileWith(ctx, claim.NewStore(rdb), js, claim.Sale{ID: *ev, Buckets: *buckets}, *units, res)
	if rerr != nil {
		return rerr
	}
	rep.print(stdout)
	if !rep.balanced() {
		return fmt.Errorf("the report does not balance")
	}
	return err
}

// splitList reads a comma-separated list, without empty entries.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// parsePIDs reads -node-pids.
func parsePIDs(s string) []int {
	var out []int
	for _, p := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(p)); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// waitForEvent polls base every 50 ms, for up to 10 s, until it serves
// event ev.
func waitForEvent(ctx context.Context, base, ev string) error {
	return wait.Until(10*time.Second, 50*time.Millisecond, func() error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events/"+ev, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		return fmt.Errorf("%s does not serve event %s", base, ev)
	})
}

func printEndpoints(w io.Writer, res crowd.Result) {
	fmt.Fprintf(w, "\n%-8s %9s %10s %9s %9s %9s %9s\n", "endpoint", "requests", "req/s", "p50", "p95", "p99", "max")
	names := make([]string, 0, len(res.Endpoints))
	for n := range res.Endpoints {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		e := res.Endpoints[n]
		fmt.Fprintf(w, "%-8s %9d %10.0f %9s %9s %9s %9s\n", n, e.Count, e.PerSecond,
			e.P50.Round(10*time.Microsecond), e.P95.Round(10*time.Microsecond), e.P99.Round(10*time.Microsecond), e.Max.Round(100*time.Microsecond))
	}
}
