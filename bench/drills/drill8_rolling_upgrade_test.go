//go:build drills

package drills

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/internal/wait"
	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// upgradeDwell is how long the drill lets each mixed fleet serve before
// the next replacement.
const upgradeDwell = 6 * time.Second

// stopGrace bounds a graceful stop (SIGTERM → exit); the nodes' own drain
// timeout is shorter.
const stopGrace = 20 * time.Second

// build names a binary of the drill: the previous release or this tree.
type build struct {
	name, bin string
}

// upgradeStep replaces one process of the fleet: node 0–2, or the worker
// (node −1), with the build to.
type upgradeStep struct {
	node int
	to   build

	grantsAt   int64         // grants when the step began
	began      time.Time     // SIGTERM sent
	stopped    time.Duration // SIGTERM → exit
	down       time.Duration // SIGTERM → the replacement ready
	ready      time.Time
	stopErr    error
	oldRelease string
}

func (s *upgradeStep) what() string {
	who := "worker"
	if s.node >= 0 {
		who = fmt.Sprintf("node %d", s.node+1)
	}
	return fmt.Sprintf("%s %s → %s", who, s.oldRelease, s.to.name)
}

// TestDrill8RollingUpgrade runs a sale on three `anteroom serve` processes
// and an `anteroom worker` of the previous release (N−1, built from git),
// replaces the nodes one by one with this tree's build (N) while the sale
// runs — SIGTERM, graceful drain, the new build on the same address — with
// the worker replaced between the second and third node, then rolls back
// the same way. Old and new scripts run side by side on the same keys
// throughout. Beside the other drills' verdict, the crowd's positions must
// never change, the frontier must keep to the admission rate, both builds
// must read back every claim record and order event the sale wrote (N−1
// looks up every acknowledged claim and rebuilds the sale from the stream,
// then N does), and every process must stop cleanly.
func TestDrill8RollingUpgrade(t *testing.T) {
	fault := func(commit string) string {
		return fmt.Sprintf("three `anteroom serve` and one `anteroom worker` of the previous release (N−1 = %s, built from git; ANTEROOM_DRILL_PREVIOUS) "+
			"replaced one by one with this tree's build (N) while 480 shoppers buy 700 units (limit 2 each, admitted at 6/s): "+
			"SIGTERM (graceful drain), the new build on the same address, %s of service between steps; node 1, node 2, the worker, node 3; "+
			"then rolled back in reverse order; every claim then read back by both builds (lookups and a rebuild from the stream)",
			commit, upgradeDwell)
	}
	// The row is recorded, FAIL, also when N−1 cannot be built; the
	// drill's clock starts once both builds are ready.
	d := newDrill(t, 8, "rolling-upgrade", fault("?"))
	prev := buildPrevious(t)
	old := build{name: "N−1", bin: prev.bin}
	cur := build{name: "N", bin: anteroomBinary(t)}
	scripts, err := scriptChanges(prev.src, filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	d.fault, d.start = fault(prev.commit[:7]), time.Now()
	d.figure("builds", "N−1 = %s; N = this tree; scripts that differ: %s", prev.commit[:7], scripts)
	d.note("The compatibility rule this drill holds a release to is in docs/operate.md, \"Rolling upgrades\"; " +
		"`TestPreviousReleaseFormats` (claim) and `TestPreviousReleaseConfig` (event) hold its record formats in CI.")
	if strings.HasPrefix(scripts, "none") {
		d.note("N−1 (%s) and N run the same scripts: this run shows the procedure (graceful stops, the same addresses, "+
			"mixed fleets of both builds, the rollback) but no two script versions side by side; "+
			"ANTEROOM_DRILL_PREVIOUS names an older commit for that (docs/operate.md lists runs that passed).", prev.commit[:7])
	}

	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	dp := newDeployment(t)
	env := []string{"ANTEROOM_REDIS_URL=" + r.URL(), "ANTEROOM_NATS_URL=" + ns.URL()}
	addrs := []string{loopback(t), loopback(t), loopback(t)}
	urls := make([]string, len(addrs))
	procs := make([]*testenv.Proc, len(addrs))
	serving := make([]build, len(addrs))
	spawns := 0
	start := func(i int, b build) *testenv.Proc {
		spawns++
		name := fmt.Sprintf("node-%d-%d", i+1, spawns)
		if i < 0 {
			name = fmt.Sprintf("worker-%d", spawns)
		}
		dd := *dp.Deployment
		dd.Bin = b.bin
		args := []string{"worker"}
		if i >= 0 {
			args = []string{"serve"}
		}
		e := env
		if i >= 0 {
			e = append(slices.Clone(env), "ANTEROOM_ADDR="+addrs[i])
		}
		p, err := dd.Spawn(name, e, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Kill)
		if i >= 0 {
			if err := p.WaitReady(urls[i], 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	for i := range addrs {
		urls[i] = "http://" + addrs[i]
		procs[i], serving[i] = start(i, old), old // the first generates the shared signing keys
	}
	const ev = "upgrade"
	spec := saleSpec{supply: 700, limit: 2, rate: 6, buckets: 4}
	dp.createSale(t, ev, spec, urls...)
	rdb := r.Client(t)
	js := testenv.ConnectJS(t, ns.URL())
	sl := claim.Sale{ID: ev, Buckets: spec.buckets}

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	worker, workerBuild := start(-1, old), old
	if _, err := waitLag(ctx, js, 20*time.Second, func(l *claim.Lag) bool { return l != nil }); err != nil {
		t.Fatalf("the worker's consumer never appeared: %v\n%s", err, worker.Tail(20))
	}

	c := newCrowd(crowdConfig{Event: ev, URLs: urls, Users: 480, Spread: 3 * time.Second, Keys: 3, Think: 2 * time.Second, TwinShare: 0.1,
		Timeouts: []time.Duration{2 * time.Second, 6 * time.Second}})
	fr := &frontierLog{rdb: rdb, ev: ev}
	sctx, stopSampling := context.WithCancel(ctx)
	sampled := fr.start(sctx)
	began := time.Now()
	crowdDone := c.start(ctx)
	d.phase("crowd started on three N−1 nodes (%s)", prev.commit[:7])

	steps := []*upgradeStep{
		{node: 0, to: cur}, {node: 1, to: cur}, {node: -1, to: cur}, {node: 2, to: cur},
		{node: 2, to: old}, {node: -1, to: old}, {node: 1, to: old}, {node: 0, to: old},
	}
	for _, s := range steps {
		if !wait.Sleep(ctx, upgradeDwell) {
			break
		}
		s.grantsAt = totals(ctx, t, rdb, sl).Granted
		s.began = time.Now()
		if s.node < 0 {
			s.oldRelease = workerBuild.name
			s.stopErr = worker.Stop(stopGrace)
			s.stopped = time.Since(s.began)
			worker, workerBuild = start(-1, s.to), s.to
		} else {
			s.oldRelease = serving[s.node].name
			s.stopErr = procs[s.node].Stop(stopGrace)
			s.stopped = time.Since(s.began)
			procs[s.node], serving[s.node] = start(s.node, s.to), s.to
		}
		s.ready = time.Now()
		s.down = s.ready.Sub(s.began)
		d.phase("%s at %d grants: stopped in %s, replacement ready after %s%s", s.what(), s.grantsAt,
			s.stopped.Round(10*time.Millisecond), s.down.Round(10*time.Millisecond), errText(s.stopErr))
	}
	crowdDone()
	ended := time.Now()
	stopSampling()
	sampled()
	d.phase("crowd done")
	if ctx.Err() != nil {
		d.check("sale finished in time", false, "the crowd was still running after %s", time.Since(began).Round(time.Second))
	}
	// The verdict reads the state with a context of its own: a sale that
	// overran is audited all the same.
	actx, acancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer acancel()

	var unclean []string
	for _, s := range steps {
		if s.stopErr != nil {
			unclean = append(unclean, s.what()+": "+s.stopErr.Error())
		}
	}
	d.check("every process stopped cleanly", len(unclean) == 0 && !steps[len(steps)-1].ready.IsZero(),
		"%d SIGTERMs, %d processes that did not exit 0 within %s%s", len(steps), len(unclean), stopGrace, sample(unclean))

	// Each fleet the steps made must have sold: a step after the sale
	// sold out would prove nothing.
	acks := c.snapshot()
	var idle []string
	var phases []string
	for i, s := range steps {
		if s.ready.IsZero() {
			break
		}
		until := ended
		if i+1 < len(steps) && !steps[i+1].began.IsZero() {
			until = steps[i+1].began
		}
		n := 0
		for _, a := range acks {
			if a.At.After(s.ready) && a.At.Before(until) {
				n++
			}
		}
		phases = append(phases, fmt.Sprintf("after %s: %d", s.what(), n))
		if n == 0 {
			idle = append(idle, s.what())
		}
	}
	d.check("the sale ran through every step", len(idle) == 0 && len(phases) == len(steps),
		"claims acknowledged after each of the %d steps, until the next: %s%s", len(steps), strings.Join(phases, "; "), sample(idle))

	au := d.audit(actx, sale{ev: ev, onSale: spec.supply, limit: spec.limit, buckets: spec.buckets, rdb: rdb, js: js}, c)
	d.positionsCheck(c)
	fr.check(d, c, spec.rate, 15*time.Second)

	// The worker (N−1 again) confirms every grant, also those the N
	// worker left.
	final, err := waitLag(actx, js, 60*time.Second, func(l *claim.Lag) bool { return l != nil && l.Pending == 0 && l.AckPending == 0 })
	d.check("the lag returns to 0", err == nil, "pending %d, ack pending %d%s", final.Pending, final.AckPending, errText(err))
	orders, err := claim.OrderStatuses(actx, js, ev)
	if err != nil {
		d.check("orders readable", false, "%v", err)
	}
	confirmed := 0
	for _, st := range orders {
		if st == "confirmed" {
			confirmed++
		}
	}
	writes, keys := kvWrites(actx, t, js)
	d.check("one order per granted claim", len(orders) == au.granted && confirmed == au.granted,
		"%d orders in the %s bucket (%d confirmed) for %d distinct granted claims on the stream, recorded by the N−1 and N workers",
		len(orders), claim.OrdersBucket, confirmed, au.granted)
	d.check("each order written once", writes == keys && keys == uint64(len(orders)), "%d writes to the bucket for %d keys", writes, keys)

	// N−1 reads every claim record: each acknowledged claim looked up
	// on the N−1 fleet by its own user.
	ackedIDs := map[string]ack{}
	for _, a := range acks {
		ackedIDs[a.ClaimID] = a
	}
	unread := d.lookups(actx, c, urls, ev, ackedIDs)
	d.check("N−1 reads every claim record", len(unread) == 0 && len(ackedIDs) > 0,
		"%d acknowledged claims looked up on the N−1 nodes (GET /events/%s/claims/{id}), %d not answered 200 confirmed%s",
		len(ackedIDs), ev, len(unread), sample(unread))

	// Both builds read every event on the stream: each rebuilds the sale
	// from it (the N−1 one after the N worker's and nodes' writes; N's
	// after the N−1 rebuild's epoch marker) and must count what the audit
	// counted.
	for _, b := range []build{old, cur} {
		rep, err := reconcileWith(actx, dp, b, env, ev)
		want := fmt.Sprintf("granted %d, released %d, available %d", au.granted, au.released, spec.supply-int64(au.granted-au.released))
		got := fmt.Sprintf("granted %d, released %d, available %d", rep.Granted, rep.Released, rep.Available)
		d.check(b.name+" rebuilds the sale from the stream", err == nil && got == want && rep.Superseded == 0,
			"`anteroom reconcile` of %s: %s, superseded %d (the audit: %s)%s", b.name, got, rep.Superseded, want, errText(err))
	}
	if evs, err := claim.CountedEvents(actx, js, ev); err != nil {
		d.check("N reads the stream after both rebuilds", false, "%v", err)
	} else {
		n := 0
		for _, e := range evs {
			if e.Type == claim.KindGranted && e.ClaimID != "" && e.User != "" {
				n++
			}
		}
		d.check("N reads the stream after both rebuilds", n == au.msgs,
			"%d granted events decoded with claim id and user, %d before the rebuilds", n, au.msgs)
	}

	var stepLines []string
	for _, s := range steps {
		if !s.ready.IsZero() {
			again := "ready again" // a node: /readyz answers 200
			if s.node < 0 {
				again = "the next started" // a worker has no /readyz
			}
			stepLines = append(stepLines, fmt.Sprintf("%s at %d grants (stopped in %.1f s, %s after %.1f s)",
				s.what(), s.grantsAt, s.stopped.Seconds(), again, s.down.Seconds()))
		}
	}
	d.figure("steps", "%s", strings.Join(stepLines, "; "))
	byBuild := map[string]int{}
	for _, a := range acks {
		byBuild[buildAt(steps, urls, old, a)]++
	}
	d.figure("acknowledged by", "N−1 nodes: %d answers, N nodes: %d answers", byBuild[old.name], byBuild[cur.name])
	d.figure("units", "%d on sale; %d granted (stream, %d events with duplicates), %d remaining in Redis", spec.supply, au.granted, au.msgs, au.redis.Remaining)
	d.crowdFigures(c)
	_, _, unreachable, _ := d.refusalCheck(c)
	var maxDown time.Duration
	for _, s := range steps {
		maxDown = max(maxDown, s.down)
	}
	var failed []string
	for _, c := range d.checks {
		if !c.OK {
			failed = append(failed, c.Name)
		}
	}
	outcome := "positions stable, frontier within the rate; both builds read back every claim and rebuild the same counts"
	if len(failed) > 0 {
		outcome = "failed: " + strings.Join(failed, ", ")
	}
	d.summary = fmt.Sprintf("%s; N−1 = %s, scripts differing: %s; 8 steps (up, worker between node 2 and 3, then back), each node down ≤ %.1f s, %d claim attempts found a node gone; %s",
		au.line(spec.supply), prev.commit[:7], scriptCount(scripts), maxDown.Seconds(), unreachable, outcome)
	if t.Failed() {
		t.Logf("worker log:\n%s", worker.Tail(20))
	}
}

// scriptCount shortens scriptChanges' text for the summary.
func scriptCount(s string) string {
	if strings.HasPrefix(s, "none") {
		return "none"
	}
	return fmt.Sprintf("%d (%s)", strings.Count(s, ", ")+1, s)
}

// buildAt returns the build that node answered a with at the time.
func buildAt(steps []*upgradeStep, urls []string, first build, a ack) string {
	i := slices.Index(urls, a.Node)
	b := first.name
	for _, s := range steps {
		if s.node == i && !s.ready.IsZero() && a.At.After(s.ready) {
			b = s.to.name
		}
	}
	return b
}

// lookups asks the nodes for each acknowledged claim as its own user; it
// returns the claims not answered 200 confirmed.
func (d *drill) lookups(ctx context.Context, c *crowd, urls []string, ev string, acked map[string]ack) []string {
	var mu sync.Mutex
	var bad []string
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	i := 0
	for id, a := range acked {
		url := urls[i%len(urls)]
		i++
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ans := c.do(ctx, 5*time.Second, http.MethodGet, url+"/events/"+ev+"/claims/"+id, map[string]string{"X-User-ID": a.User})
			st := ans.reply.Claim.Status
			if ans.status != http.StatusOK || st != "confirmed" {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s (%s %s)", id, ans.kind(), st))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(bad)
	return bad
}

// reconcileWith runs `anteroom reconcile --event ev` of build b and
// decodes its report.
func reconcileWith(ctx context.Context, dp *deployment, b build, env []string, ev string) (claim.Report, error) {
	var rep claim.Report
	cmd := exec.CommandContext(ctx, b.bin, "reconcile", "-event", ev, "-timeout", "60s")
	cmd.Env = append(withoutAnteroom(os.Environ()), env...)
	cmd.Env = append(cmd.Env, "ANTEROOM_DATA_DIR="+filepath.Join(dp.Dir, "reconcile"), "ANTEROOM_ADMIN_TOKEN="+dp.Admin,
		"ANTEROOM_TICKET_SECRET="+hex.EncodeToString(dp.Secret), "ANTEROOM_SIGNING_KEYS="+dp.Keys, "ANTEROOM_LOG_FORMAT=text")
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return rep, fmt.Errorf("%s reconcile: %v: %s", b.name, err, lastLines(string(ee.Stderr), 5))
		}
		return rep, fmt.Errorf("%s reconcile: %v", b.name, err)
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return rep, fmt.Errorf("%s reconcile: decode its report: %v: %s", b.name, err, lastLines(string(out), 5))
	}
	return rep, nil
}

// withoutAnteroom drops the ANTEROOM_* settings of the test's own
// environment.
func withoutAnteroom(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "ANTEROOM_") })
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], " / ")
}

// positionsCheck checks that no shopper's position ever changed and that
// no two shoppers were given one position.
func (d *drill) positionsCheck(c *crowd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var moved []string
	owner := map[int64]string{}
	var shared []string
	for u, ps := range c.positions {
		if len(ps) > 1 {
			moved = append(moved, fmt.Sprintf("%s %v", u, ps))
		}
		for _, p := range ps {
			if o, ok := owner[p]; ok && o != u {
				shared = append(shared, fmt.Sprintf("%d (%s, %s)", p, o, u))
			}
			owner[p] = u
		}
	}
	slices.Sort(moved)
	slices.Sort(shared)
	d.check("positions stable", len(moved) == 0 && len(shared) == 0 && len(c.positions) > 0,
		"%d shoppers were told a position (join and every status answer), %d of them more than one%s; %d positions told to two shoppers%s",
		len(c.positions), len(moved), sample(moved), len(shared), sample(shared))
}

// frontierLog samples a sale's frontier as Redis holds it, with Redis's
// clock and the number of people who joined, in one MULTI.
type frontierLog struct {
	rdb    redis.UniversalClient
	ev     string
	mu     sync.Mutex
	frames []frontierFrame
	errs   int
}

type frontierFrame struct {
	at       time.Time
	f        float64
	joined   int64
	hasFront bool
}

// start samples every 200 ms until ctx ends; the returned func waits for
// the sampler to stop.
func (fl *frontierLog) start(ctx context.Context) func() {
	done := make(chan struct{})
	key := "ar:{" + fl.ev + "}:adm" // admission/frontier.go's frontierKey
	seq := queue.KeysFor(fl.ev).Seq
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			var f *redis.StringCmd
			var now *redis.TimeCmd
			var joined *redis.StringCmd
			_, err := fl.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				f = p.HGet(ctx, key, "f")
				now = p.Time(ctx)
				joined = p.Get(ctx, seq)
				return nil
			})
			fr := frontierFrame{at: now.Val()}
			if v, err := f.Float64(); err == nil {
				fr.f, fr.hasFront = v, true
			}
			fr.joined, _ = joined.Int64()
			fl.mu.Lock()
			if err != nil && err != redis.Nil {
				fl.errs++
			} else if fr.hasFront {
				fl.frames = append(fl.frames, fr)
			}
			fl.mu.Unlock()
			wait.Sleep(ctx, 200*time.Millisecond)
		}
	}()
	return func() { <-done }
}

// check checks the samples: the frontier never passes the people who
// joined, and its advance over every span of 1–3 s and of 5–10 s is at
// most
//
//	rate × (span + one step's credit) + no-show candidates + 2
//
// where a no-show candidate is a position the frontier passed at least
// grace before the span's end whose holder had not fetched an admission
// within half the grace of it (the documented no-show rule moves past
// them), and 2 is rounding.
func (fl *frontierLog) check(d *drill, c *crowd, rate float64, grace time.Duration) {
	credit := admission.MaxCreditFor(100 * time.Millisecond)
	fl.mu.Lock()
	frames := slices.Clone(fl.frames)
	errs := fl.errs
	fl.mu.Unlock()
	c.mu.Lock()
	fetched := make(map[int64]time.Time, len(c.fetched))
	for p, at := range c.fetched {
		fetched[p] = at
	}
	c.mu.Unlock()
	reached := map[int64]time.Time{} // when the frontier was first seen at or past each position
	var top int64
	for _, fr := range frames {
		for ; top < int64(fr.f); top++ {
			reached[top+1] = fr.at
		}
	}
	passed := func(p int64) (time.Time, bool) { at, ok := reached[p]; return at, ok }
	noShows := func(lo, hi float64, by time.Time) int {
		n := 0
		for p := max(int64(lo)+1, 1); p <= int64(hi); p++ {
			at, ok := passed(p)
			if !ok || at.After(by.Add(-grace)) {
				continue
			}
			if f, ok := fetched[p]; !ok || f.After(at.Add(grace/2)) {
				n++
			}
		}
		return n
	}
	var bad []string
	var fastest float64
	var spans int
	for i, cur := range frames {
		if int64(cur.f) > cur.joined {
			bad = append(bad, fmt.Sprintf("frontier %.1f passed the %d who joined", cur.f, cur.joined))
		}
		for j := i - 1; j >= 0; j-- {
			old := frames[j]
			span := cur.at.Sub(old.at)
			if span > 10*time.Second {
				break
			}
			if !(span >= time.Second && span <= 3*time.Second) && !(span >= 5*time.Second) {
				continue
			}
			spans++
			tol := noShows(old.f-rate*grace.Seconds()-2, cur.f, cur.at)
			allowed := rate*(span+credit).Seconds() + float64(tol) + 2
			if span >= 5*time.Second {
				fastest = max(fastest, (cur.f-old.f)/span.Seconds())
			}
			if cur.f-old.f > allowed {
				bad = append(bad, fmt.Sprintf("%.1f → %.1f in %.1f s (allowed %.1f with %d no-show candidates)", old.f, cur.f, span.Seconds(), allowed, tol))
			}
		}
	}
	last := 0.0
	if len(frames) > 0 {
		last = frames[len(frames)-1].f
	}
	d.check("frontier within the rate", len(bad) == 0 && spans > 0,
		"%d samples, %d spans of 1–3 s and 5–10 s checked against %.0f/s × (span + %s credit) + no-show candidates + 2; fastest 5–10 s pace %.2f/s; frontier at the end %.0f; %d read errors; %d over%s",
		len(frames), spans, rate, credit, fastest, last, errs, len(bad), sample(bad))
}
