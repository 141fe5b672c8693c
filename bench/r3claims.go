package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/anteroom/anteroom/internal/procstat"
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
		return err
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
	variants := []struct {
		key, what, bin string
		redis          *proc
		redisEnv       string
	}{
		{"r3", "R3 NATS cluster + redis-server", s.bin, rp, "ANTEROOM_REDIS_URL=redis://" + raddr},
	}
	if s.before != "" {
		variants = append([]struct {
			key, what, bin string
			redis          *proc
			redisEnv       string
		}{{"r3-before", "R3 NATS cluster + redis-server, the build before (-before)", s.before, rp, "ANTEROOM_REDIS_URL=redis://" + raddr}}, variants...)
	}
	cprocs, caddrs, err := x.redisCluster(filepath.Join(dir, "rcluster"))
	if err != nil {
		r.note(fmt.Sprintf("R3: the 3-master Redis Cluster did not start: %v", err))
	} else {
		variants = append(variants, struct {
			key, what, bin string
			redis          *proc
			redisEnv       string
		}{"r3-cluster", "R3 NATS cluster + 3-master Redis Cluster", s.bin, cprocs[0], "ANTEROOM_REDIS_CLUSTER_ADDRS=" + caddrs})
	}
	r.command(fmt.Sprintf("R3: 3 × `anteroom natsd` (cluster on loopback, order and lifecycle streams R3) + a node per row (ANTEROOM_NATS_URL=<3 URLs>, ANTEROOM_STREAM_REPLICAS=3); claims: %d Go workers, keep-alive HTTP, distinct pre-minted tokens, %s closed loop; CPU profile of the node over the loop (/debug/pprof/profile)", conns, r.d))
	var r3node *stack
	for i, v := range variants {
		n, pprofAddr, err := x.node(s, filepath.Join(dir, v.key), v.key, v.bin, v.redis, v.redisEnv)
		if err != nil {
			return err
		}
		res, err := r3Claims(ctx, n, x, pprofAddr, fmt.Sprintf("r3c%d", i), r.d)
		if err != nil {
			n.node.stop()
			return fmt.Errorf("%s: %w", v.what, err)
		}
		r.peaks["claim-"+v.key] = res.rate
		ratio := res.rate / evalsha
		r.add(fmt.Sprintf("granted claims/s end to end, %s, vs redis-benchmark EVALSHA of the claim script", v.what),
			fmt.Sprintf("%.0f/s", res.rate), fmt.Sprintf("%.0f/s", evalsha), ratio, "≥ 0.4", ratio >= 0.4)
		r.note(fmt.Sprintf("%s: %s", v.what, res.describe()))
		if res.other > 0 {
			r.note(fmt.Sprintf("%s: %d answers other than 201 during the closed loop", v.what, res.other))
		}
		if v.key == "r3" {
			r3node = n
		} else {
			n.node.stop()
		}
	}
	if c := r.peaks["claim"]; c > 0 {
		r.note(fmt.Sprintf("claims in this run: embedded JetStream %.0f/s (%.2f× EVALSHA); R3 cluster + redis-server %.0f/s (%.2f×)", c, c/evalsha, r.peaks["claim-r3"], r.peaks["claim-r3"]/evalsha))
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
	rate                 float64
	other                int64
	claims               float64
	node, redis, natsCPU time.Duration // per granted claim
	api                  map[string]int
	parts                []part
}

// describe is the per-claim breakdown for the notes.
func (x r3Result) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f granted/s; server CPU per claim: node %.1f µs, redis-server %.1f µs, the 3 NATS servers %.1f µs", x.rate,
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
	if len(x.parts) > 0 {
		b.WriteString("; node CPU per claim by part (pprof):")
		for _, p := range x.parts {
			fmt.Fprintf(&b, " %s %.1f µs (%.0f%%),", p.name, us(time.Duration(float64(x.node)*p.share)), 100*p.share)
		}
		s := b.String()
		return strings.TrimSuffix(s, ",")
	}
	return b.String()
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// r3Claims runs the claims closed loop on node n for d, counting the
// JetStream API requests on the cluster and profiling the node.
func r3Claims(ctx context.Context, n *stack, x *r3, pprofAddr, ev string, d time.Duration) (r3Result, error) {
	var res r3Result
	if err := n.createEvent(ctx, ev, 10_000_000, 1000, map[string]any{"buckets": 8}); err != nil {
		return res, err
	}
	const tokens = 150_000
	toks, err := mintTokens(n, ev, tokens)
	if err != nil {
		return res, err
	}
	stopCount, err := countAPI(x.natsURLs)
	if err != nil {
		return res, err
	}
	procs := append([]*proc{n.node, n.redis}, x.nats...)
	before := make([]time.Duration, len(procs))
	for i, p := range procs {
		before[i] = procstat.CPU(p.cmd.Process.Pid)
	}
	prof := filepath.Join(n.dir, "cpu.pprof")
	profDone := make(chan error, 1)
	go func() {
		profDone <- fetchProfile(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, max(int(d.Seconds())-1, 1)), prof)
	}()
	res.rate, res.other = closedLoop(n, conns, d, tokens, http.StatusCreated, func(i int) (string, string, map[string]string) {
		return http.MethodPost, "/events/" + ev + "/claim", map[string]string{"Authorization": "Bearer " + toks[i], "X-User-ID": fmt.Sprintf("c%d", i)}
	})
	res.api = stopCount()
	after := make([]time.Duration, len(procs))
	for i, p := range procs {
		after[i] = procstat.CPU(p.cmd.Process.Pid)
	}
	res.claims = max(res.rate*d.Seconds(), 1) // granted claims, near enough (the loop ran for d)
	per := func(i int) time.Duration { return time.Duration(float64(after[i]-before[i]) / res.claims) }
	res.node, res.redis = per(0), per(1)
	for i := 2; i < len(procs); i++ {
		res.natsCPU += per(i)
	}
	if err := <-profDone; err != nil {
		return res, fmt.Errorf("profile: %w", err)
	}
	res.parts, err = attribute(n.bin, prof)
	return res, err
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

func fetchProfile(url, path string) error {
	c := &http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// part is a share of the node's CPU samples.
type part struct {
	name  string
	share float64
}

// parts names the node's work on a claim, each by the functions on a
// sample's stack; a sample goes to the first part that matches. The NATS
// client's read loop parses every inbound message — PubAcks and the
// marker view's deliveries alike — so it counts under "publish + ack".
var parts = []struct {
	name string
	re   *regexp.Regexp
}{
	{"fence (marker view, stream reads)", regexp.MustCompile(`claim\.\(\*markerView\)|claim\.\(\*markerLanes\)|claim\.firstMarkerAfter|claim\.followView|jetstream\.\(\*orderedConsumer\)|jetstream\.\(\*orderedSubscription\)|jetstream\.\(\*stream\)\.GetMsg|jetstream\.\(\*stream\)\.GetLastMsgForSubject`)},
	{"order worker", regexp.MustCompile(`claim\.\(\*Worker\)`)},
	{"signature", regexp.MustCompile(`ed25519|anteroom/tokens\.`)},
	{"script (Redis client)", regexp.MustCompile(`redis/go-redis`)},
	{"publish + ack", regexp.MustCompile(`claim\.\(\*Publisher\)|nats-io/nats\.go`)},
	{"HTTP", regexp.MustCompile(`valyala/fasthttp|gofiber/fiber`)},
	{"GC", regexp.MustCompile(`runtime\.gcBgMarkWorker|runtime\.bgsweep|runtime\.gcDrain|runtime\.mallocgc`)},
	{"scheduler", regexp.MustCompile(`runtime\.schedule|runtime\.findRunnable|runtime\.mcall|runtime\.park_m|runtime\.netpoll`)},
}

var traceValue = regexp.MustCompile(`^\s*([0-9.]+)(ns|us|µs|ms|s)\s+(\S+)`)

// attribute reads the CPU profile at path (of binary bin) with go tool
// pprof -traces and returns each part's share of the samples, "other"
// last.
func attribute(bin, path string) ([]part, error) {
	out, err := exec.Command("go", "tool", "pprof", "-traces", bin, path).Output()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof -traces: %w", err)
	}
	sums := make([]float64, len(parts)+1)
	var total float64
	flush := func(v float64, stack []string) {
		if v == 0 {
			return
		}
		total += v
		joined := strings.Join(stack, "\n")
		for i, p := range parts {
			if p.re.MatchString(joined) {
				sums[i] += v
				return
			}
		}
		sums[len(parts)] += v
	}
	var v float64
	var stack []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "-----") {
			flush(v, stack)
			v, stack = 0, nil
			continue
		}
		if m := traceValue.FindStringSubmatch(line); m != nil && v == 0 {
			f, _ := strconv.ParseFloat(m[1], 64)
			switch m[2] {
			case "s":
				f *= 1e9
			case "ms":
				f *= 1e6
			case "us", "µs":
				f *= 1e3
			}
			v, stack = f, []string{m[3]}
			continue
		}
		if v != 0 {
			if f := strings.TrimSpace(line); f != "" {
				stack = append(stack, f)
			}
		}
	}
	flush(v, stack)
	if total == 0 {
		return nil, fmt.Errorf("no samples in %s", path)
	}
	out2 := make([]part, 0, len(parts)+1)
	for i, p := range parts {
		out2 = append(out2, part{p.name, sums[i] / total})
	}
	return append(out2, part{"other", sums[len(parts)] / total}), nil
}
