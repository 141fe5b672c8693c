package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/valyala/fasthttp"

	"github.com/anteroom/anteroom/internal/loopback"
	"github.com/anteroom/anteroom/internal/profparts"
)

// measureR3 measures the production shape (see r3): granted claims/s end
// to end on a node against the R3 NATS cluster with a redis-server, and
// with a 3-master Redis Cluster, beside redis-benchmark EVALSHA of the same
// claim.lua, the JetStream API requests each claim costs and a CPU profile
// of the node attributed by part; with -before, the same claims on the
// build before a change, side by side; then status and join on the R3
// node against the same fiber ceiling.
func measureR3(ctx context.Context, s *stack, r *report) error {
	dir := filepath.Join(s.dir, "r3")
	x, err := startR3(dir, s.bin)
	if err != nil {
		// Free ports are picked before the servers bind them: on a busy
		// host another process may take one first. Once more, on others.
		r.note(fmt.Sprintf("R3: the NATS cluster did not start (%v); started again on other ports", err))
		if x, err = startR3(filepath.Join(dir, "again"), s.bin); err != nil {
			return err
		}
	}
	defer x.stop()
	// The baseline again, beside these rows: the shared cores' load moves
	// between steps.
	evalsha, err := evalshaRate(ctx, s.redisAddr)
	if err != nil {
		return err
	}
	if earlier := r.peaks["evalsha"]; earlier > 0 {
		r.note(fmt.Sprintf("R3 rows: redis-benchmark EVALSHA measured again beside them: %.0f/s (%.0f/s in the redis step)", evalsha, earlier))
	} else {
		r.command("redis-benchmark -c 50 -n 200000 -r 100000000 EVALSHA <claim.lua> 9 <bucket keys> …   # one grant per call, random users")
	}
	rp, raddr, err := x.redisSingle(filepath.Join(dir, "redis"))
	if err != nil {
		return err
	}
	type variant struct {
		key, what, bin string
		redis          *proc
		redisEnv       string
		rounds         []r3Result
	}
	single := "ANTEROOM_REDIS_URL=redis://" + raddr
	variants := []*variant{{key: "r3", what: "R3 NATS cluster + redis-server", bin: s.bin, redis: rp, redisEnv: single}}
	order := []*variant{variants[0]}
	if s.before != "" {
		// Two rounds each, alternating, so the host's drift falls on both.
		b := &variant{key: "r3-before", what: "R3 NATS cluster + redis-server, the build before (-before)", bin: s.before, redis: rp, redisEnv: single}
		variants = []*variant{b, variants[0]}
		order = []*variant{b, variants[1], b, variants[1]}
	}
	cprocs, caddrs, err := x.redisCluster(filepath.Join(dir, "rcluster"))
	if err != nil {
		r.note(fmt.Sprintf("R3: the 3-master Redis Cluster did not start: %v", err))
	} else {
		c := &variant{key: "r3-cluster", what: "R3 NATS cluster + 3-master Redis Cluster", bin: s.bin, redis: cprocs[0], redisEnv: "ANTEROOM_REDIS_CLUSTER_ADDRS=" + caddrs}
		variants, order = append(variants, c), append(order, c)
	}
	r.command(fmt.Sprintf("R3: 3 × `anteroom natsd` (cluster on loopback, order and lifecycle streams R3) + one node at a time (ANTEROOM_NATS_URL=<3 URLs>, ANTEROOM_STREAM_REPLICAS=3); claims: %d Go workers, keep-alive HTTP, distinct pre-minted tokens, %s closed loop, CPU profile of the node over it (/debug/pprof/profile); then %d workers for %s (latency-bound); with -before the two builds alternate, two rounds each", conns, r.d, fewWorkers, r.d/2))
	var r3node *stack
	toks := map[*variant][]string{}
	used := map[*variant]int{}
	lastR3 := 0 // the R3 + redis-server node's last round stays up for status and join
	for i, v := range order {
		if v.key == "r3" {
			lastR3 = i
		}
	}
	for i, v := range order {
		n, err := x.node(s, filepath.Join(dir, v.key), v.key, v.bin, v.redis, v.redisEnv)
		if err != nil {
			return err
		}
		ev := "r3" + v.key
		if toks[v] == nil {
			if err := n.createEvent(ctx, ev, 10_000_000, 1000, map[string]any{"buckets": 8}); err != nil {
				n.node.stop()
				return err
			}
			if toks[v], err = mintTokens(n, ev, 120_000); err != nil {
				n.node.stop()
				return err
			}
		}
		res, err := r3Claims(n, x, ev, r.d, toks[v], used[v])
		if err != nil {
			n.node.stop()
			return fmt.Errorf("%s: %w", v.what, err)
		}
		used[v] = res.issued
		v.rounds = append(v.rounds, res)
		if i == lastR3 {
			r3node = n
		} else {
			n.node.stop()
		}
	}
	for _, v := range variants {
		var rate float64
		for _, res := range v.rounds {
			rate += res.rate / float64(len(v.rounds))
		}
		r.peaks["claim-"+v.key] = rate
		ratio := rate / evalsha
		r.add(fmt.Sprintf("granted claims/s end to end, %s, vs redis-benchmark EVALSHA of the claim script", v.what),
			fmt.Sprintf("%.0f/s", rate), fmt.Sprintf("%.0f/s", evalsha), ratio, "≥ 0.4", ratio >= 0.4)
		for i, res := range v.rounds {
			r.note(fmt.Sprintf("%s, round %d of %d: %s", v.what, i+1, len(v.rounds), res.describe()))
		}
	}
	if c := r.peaks["claim"]; c > 0 {
		r.note(fmt.Sprintf("claims in this run: embedded JetStream %.0f/s (%.2f× EVALSHA); R3 cluster + redis-server %.0f/s (%.2f×)", c, c/evalsha, r.peaks["claim-r3"], r.peaks["claim-r3"]/evalsha))
	}
	for _, v := range variants {
		if v.key == "r3" {
			if err := measureClaimFloor(s, x, rp, raddr, r, v.rounds); err != nil {
				return err
			}
		}
	}
	if r3node == nil {
		return errors.New("no R3 node left for status and join")
	}
	defer r3node.node.stop()
	r.prefix = "R3 NATS cluster + redis-server: "
	defer func() { r.prefix = "" }()
	if err := measureStatus(ctx, r3node, r); err != nil {
		return err
	}
	return measureJoin(ctx, r3node, r)
}

// r3Result is one claims measurement on the R3 cluster.
type r3Result struct {
	issued               int // tokens used
	fewRate, fewClaims   float64
	fewAPI               map[string]int
	rate                 float64
	other                int64
	claims               float64
	node, redis, natsCPU time.Duration // per granted claim
	api                  map[string]int
	parts                []profparts.Share
}

// describe is the per-claim breakdown for the notes.
func (x r3Result) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f granted/s; server CPU per claim: node %.1f µs, redis-server %.1f µs, the NATS servers %.1f µs", x.rate,
		us(x.node), us(x.redis), us(x.natsCPU))
	kinds := make([]string, 0, len(x.api))
	for k := range x.api {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	b.WriteString("; JetStream API requests per claim:")
	total := 0
	for _, k := range kinds {
		total += x.api[k]
		fmt.Fprintf(&b, " %s %.3f,", k, float64(x.api[k])/x.claims)
	}
	fmt.Fprintf(&b, " all %.3f", float64(total)/x.claims)
	fmt.Fprintf(&b, "; %d workers: %.0f granted/s, %.3f fence reads (MSG.GET) per claim", fewWorkers, x.fewRate, float64(x.fewAPI["STREAM.MSG.GET.ANTEROOM_ORDERS"]+x.fewAPI["DIRECT.GET.ANTEROOM_ORDERS"])/x.fewClaims)
	if len(x.parts) > 0 {
		b.WriteString("; node CPU per claim by part (pprof):")
		b.WriteString(" " + profparts.Format(x.parts, us(x.node)))
		return b.String()
	}
	return b.String()
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// fewWorkers is the latency-bound run's workers: there a claim's round
// trips, not the cores, set the pace.
const fewWorkers = 4

// r3Claims runs the claims closed loop on node n for d with toks from
// base on (the ones before were used),
// counting the JetStream API requests on the cluster and profiling the
// node, then fewWorkers workers for d/2.
func r3Claims(n *stack, x *r3, ev string, d time.Duration, toks []string, base int) (r3Result, error) {
	var res r3Result
	stopCount, err := countAPI(x.natsURLs)
	if err != nil {
		return res, err
	}
	per := cpuMeter(append([]*proc{n.node, n.redis}, x.nats...)...)
	finish := n.profile("claims-"+filepath.Base(n.dir), d)
	claim := func(off int) func(i int) (string, string, map[string]string) {
		return func(i int) (string, string, map[string]string) {
			return http.MethodPost, "/events/" + ev + "/claim", map[string]string{"Authorization": "Bearer " + toks[off+i], "X-User-ID": fmt.Sprintf("c%d", off+i)}
		}
	}
	start := time.Now()
	var issued int64
	res.rate, res.other, issued = closedLoopN(n, conns, d, (len(toks)-base)/2, http.StatusCreated, claim(base))
	res.claims = max(res.rate*time.Since(start).Seconds(), 1)
	res.api = stopCount()
	cost := per(res.claims)
	res.node, res.redis, res.natsCPU = cost[0], cost[1], cost[2:].total()
	if res.parts, err = finish(profparts.Claim, false); err != nil {
		return res, err
	}
	// Latency-bound: few workers, each claim's round trips set the pace.
	off := base + int(issued)
	if stopCount, err = countAPI(x.natsURLs); err != nil {
		return res, err
	}
	start = time.Now()
	var few int64
	res.fewRate, _, few = closedLoopN(n, fewWorkers, d/2, len(toks)-off, http.StatusCreated, claim(off))
	res.fewAPI = stopCount()
	res.fewClaims = max(res.fewRate*time.Since(start).Seconds(), 1)
	res.issued = off + int(few)
	return res, nil
}

// countAPI counts JetStream API requests by kind on the cluster at url
// until the returned stop is called: a plain subscriber on $JS.API.>
// receives every request.
func countAPI(url string) (func() map[string]int, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	counts := map[string]int{}
	if _, err := nc.Subscribe("$JS.API.>", func(m *nats.Msg) {
		// The kind and its stream: STREAM.MSG.GET.ANTEROOM_ORDERS,
		// CONSUMER.MSG.NEXT.<stream>, DIRECT.GET.<stream>, …
		kind := strings.TrimPrefix(m.Subject, "$JS.API.")
		for _, p := range []string{"DIRECT.GET.", "CONSUMER.MSG.NEXT.", "CONSUMER.INFO.", "STREAM.MSG.GET.", "STREAM.INFO."} {
			if rest, ok := strings.CutPrefix(kind, p); ok {
				stream, _, _ := strings.Cut(rest, ".")
				kind = p + stream
				break
			}
		}
		mu.Lock()
		counts[kind]++
		mu.Unlock()
	}); err != nil {
		nc.Close()
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	return func() map[string]int {
		_ = nc.Flush()
		nc.Close()
		mu.Lock()
		defer mu.Unlock()
		return counts
	}, nil
}

// measureClaimFloor measures what a claim on the R3 cluster costs
// whatever does it (the ceiling's /floor/claim: the HTTP exchange, a
// number from Redis in a shared pipeline, an order-sized publish awaiting
// JetStream's acknowledgement on an R3 file stream, and none of
// anteroom's work: no token checked, no grant script), with the claims
// step's generator, against the node's CPU per claim in rounds (the R3 +
// redis-server node's). 1 − the ratio is the most any cut of anteroom's
// own work could take off a claim's node CPU.
func measureClaimFloor(s *stack, x *r3, redisProc *proc, redisAddr string, r *report, rounds []r3Result) error {
	var node time.Duration
	for _, res := range rounds {
		node += res.node / time.Duration(len(rounds))
	}
	port, err := loopback.FreePort()
	if err != nil {
		return err
	}
	dir := filepath.Join(s.dir, "r3", "floor")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fp, err := startHTTP(dir, "ceiling-floor", s.ceil.cmd.Path, port, "/", nil, "-addr", fmt.Sprintf("127.0.0.1:%d", port),
		"-redis", redisAddr, "-nats", x.natsURLs, "-replicas", fmt.Sprint(len(x.nats)))
	if err != nil {
		return err
	}
	defer fp.stop()
	f := *s
	f.fast = &fasthttp.HostClient{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxConns: 4096, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	meter := cpuMeter(append([]*proc{fp, redisProc}, x.nats...)...)
	start := time.Now()
	rate, other, _ := closedLoopN(&f, conns, r.d, -1, http.StatusCreated, func(i int) (string, string, map[string]string) {
		return http.MethodPost, "/floor/claim", map[string]string{"Authorization": "Bearer floor", "X-User-ID": fmt.Sprintf("f%d", i)}
	})
	per := meter(max(rate*time.Since(start).Seconds(), 1))
	natsCPU := per[2:].total()
	r.command(fmt.Sprintf("claim floor: the ceiling with -redis <the R3 step's redis-server> -nats <the R3 cluster> -replicas %d, POST /floor/claim, %d Go workers, %s closed loop", len(x.nats), conns, r.d))
	r.note(fmt.Sprintf("claim floor (R3): %.0f claims/s; server CPU per claim: ceiling %.1f µs, redis-server %.1f µs, the NATS servers %.1f µs", rate, us(per[0]), us(per[1]), us(natsCPU)))
	if other > 0 {
		r.note(fmt.Sprintf("claim floor (R3): %d answers not 201 or not answered", other))
	}
	if node > 0 {
		ratio := float64(per[0]) / float64(node)
		r.add("claim floor on R3 (the HTTP exchange, a pipelined Redis INCR, an R3 publish awaiting its ack; no token check, no grant script): its CPU per claim vs the R3 node's; 1 − ratio bounds any cut of anteroom's work",
			fmt.Sprintf("%.1f µs", us(per[0])), fmt.Sprintf("%.1f µs", us(node)), ratio, "—", false)
	}
	return nil
}
