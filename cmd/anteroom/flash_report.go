package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/anteroom/anteroom/internal/crowd"
	"github.com/anteroom/anteroom/internal/profparts"
)

// flashRow is one second of the run: the generator's account of it and
// the nodes' and Redis's at its end.
type flashRow struct {
	t int
	crowd.Second
	flashSample
	sampled bool
}

// rows joins the crowd's seconds with the samples taken at their ends
// (sample i is taken about i+1 s after the start).
func (r *flashReport) rows() []flashRow {
	out := make([]flashRow, len(r.crowd.Seconds))
	for i, s := range r.crowd.Seconds {
		out[i] = flashRow{t: i, Second: s}
	}
	for _, smp := range r.samples {
		i := int(smp.at/time.Second) - 1
		if i >= 0 && i < len(out) && !out[i].sampled {
			out[i].flashSample, out[i].sampled = smp, true
		}
	}
	return out
}

func (w flashRow) print(out io.Writer) {
	d := func(x time.Duration) string {
		if x == 0 {
			return "-"
		}
		return x.Round(10 * time.Microsecond).String()
	}
	fmt.Fprintf(out, "| %d s | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s | %s | %s | %.2f | %.2f | %d | %d |\n",
		w.t, w.Offered, w.Sent, w.LateOffered, w.Answered, w.OK, w.Limited, w.Unavailable, w.Failed+w.Other,
		d(w.Join.P50), d(w.Join.P99), d(w.joinP50), d(w.joinP99), w.nodeCores(), w.redisCores(), w.Polls, w.Claims)
}

const flashHeader = "| second | offered | sent | late offered | answered | 2xx | 429 | 503 | no answer/other | client p50 | client p99 | node p50 | node p99 | node cores | redis cores | polls | claims |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"

// realPeak is the most joins the arrival curve offers in one second
// before it is stretched.
func (r *flashReport) realPeak() int {
	stretch := max(r.opts.curve.Stretch, 1e-9)
	var best, j int
	for i, a := range r.arrivals {
		for float64(a-r.arrivals[j]) >= stretch*float64(time.Second) {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// print writes the report: the checks, the totals, the peak seconds, the
// per-core figures and the whole per-second table.
func (r *flashReport) print(w io.Writer, full bool) {
	o, c := r.opts, r.crowd
	secs := r.elapsed.Seconds()
	verdict := "PASS"
	if !r.ok() {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\nflash: %d people, %d units, %d nodes, Redis %s, join_shards %d, admitting %.0f/s; %s\n", o.people, o.units, len(o.urls),
		map[bool]string{true: fmt.Sprintf("Cluster of %d masters", len(o.clusterAddrs)), false: "one redis-server"}[len(o.clusterAddrs) > 0], o.joinShards, o.rate, r.elapsed.Round(time.Second))
	fmt.Fprintf(w, "arrivals             %s: the last offered at %s\n", o.curve, r.arrivals[len(r.arrivals)-1].Round(time.Second))
	fmt.Fprintf(w, "joined               %d of %d (the nodes count %.0f, anteroom_queue_joined_total); offered %d, late offered (> 1 s) %d; errors %d\n",
		c.Joined, o.people, r.serverJoined, c.Offered, c.LateOffered, c.Errors)
	fmt.Fprintf(w, "join latency         client p50 %s, p99 %s, max %s over %d requests\n", c.Join.P50.Round(10*time.Microsecond), c.Join.P99.Round(10*time.Microsecond), c.Join.Max.Round(time.Millisecond), c.Join.Count)
	p := r.positions
	fmt.Fprintf(w, "positions            %d told, %d distinct, %d outside 1..%d: distinct and in range %v, a bijection %v\n", p.known, p.distinct, p.outside, o.people, p.consistent(), p.bijection(o.people))
	fmt.Fprintf(w, "sale                 sold out %v (anteroom_sale_sold_out); admitted %d seen by the crowd, %d claimed, %d told sold out at their claim\n", r.soldOut, c.Admitted, c.Claimed, c.ClaimSoldOut)
	fmt.Fprintf(w, "status polls         %d answered (client p50 %s, p99 %s); sent > 1 s late %d\n", c.Polls, c.Status.P50.Round(10*time.Microsecond), c.Status.P99.Round(10*time.Microsecond), c.Late)
	fmt.Fprintf(w, "per-second table     offered sums to %d, 2xx joins to %d\n", r.offeredSum, r.secondsOK)
	if mem := r.memAfter - r.memBefore; c.Joined > 0 {
		fmt.Fprintf(w, "redis memory         used_memory %d → %d bytes (all masters): %+d for %d people, %.1f bytes per person\n", r.memBefore, r.memAfter, mem, c.Joined, float64(mem)/float64(c.Joined))
	}
	fmt.Fprintf(w, "cpu                  nodes %.1f s (%.2f cores), redis-server %.1f s (%.2f cores), generator %.1f s (%.2f cores); machine busy %.2f of %.0f cores; load %s\n",
		r.nodeCPU.Seconds(), r.nodeCPU.Seconds()/secs, r.redisCPU.Seconds(), r.redisCPU.Seconds()/secs,
		r.selfCPU.Seconds(), r.selfCPU.Seconds()/secs, r.machineBusy.Seconds()/secs, r.machine.Seconds()/secs, r.load)
	if reqs := c.Joined + c.Polls + c.Claimed; reqs > 0 {
		fmt.Fprintf(w, "cpu per request      node %.1f µs, redis %.1f µs (joins, polls and claims: %d)\n",
			float64(r.nodeCPU.Microseconds())/float64(reqs), float64(r.redisCPU.Microseconds())/float64(reqs), reqs)
	}
	rows := r.rows()
	peak := slices.Clone(rows)
	slices.SortStableFunc(peak, func(a, b flashRow) int { return int(b.OK - a.OK) })
	peak = peak[:min(5, len(peak))]
	for _, k := range peak {
		if !k.sampled || k.nodeCPU == 0 {
			continue
		}
		perNode, perRedis := float64(k.OK)/k.nodeCores(), float64(k.OK)/max(k.redisCores(), 1e-9)
		fmt.Fprintf(w, "peak second          %d s: %d joins answered 2xx (%d polls, %d claims) on %.2f node cores and %.2f Redis cores: %.0f joins/s per node core, %.0f per Redis core\n",
			k.t, k.OK, k.Polls, k.Claims, k.nodeCores(), k.redisCores(), perNode, perRedis)
		if real := r.realPeak(); o.curve.Stretch != 1 {
			fmt.Fprintf(w, "sizing               the curve unstretched offers %d joins in its busiest second: at these figures %.0f node cores and %.1f Redis cores for them\n",
				real, float64(real)/perNode, float64(real)/perRedis)
		}
		break
	}
	if c.Joined > 0 && r.nodeCPU > 0 {
		fmt.Fprintf(w, "over the run         %.0f joins per node CPU second, %.0f per Redis CPU second (with the polls and claims that came with them)\n",
			float64(c.Joined)/r.nodeCPU.Seconds(), float64(c.Joined)/max(r.redisCPU.Seconds(), 1e-9))
	}
	if p := r.prof; p.path != "" {
		if p.err != nil {
			fmt.Fprintf(w, "profile              %s: %v\n", p.path, p.err)
		} else {
			fmt.Fprintf(w, "profile              the first node from %s for %s: %s (go tool pprof %s %s)\n", p.from, p.span, p.path, p.bin, p.path)
			fmt.Fprintf(w, "  by request         %s\n", profparts.Format(p.kinds, 0))
			fmt.Fprintf(w, "  by part            %s\n", profparts.Format(p.parts, 0))
		}
	}
	fmt.Fprintf(w, "the report and the stream\n")
	if r.balanceErr != nil {
		fmt.Fprintf(w, "  could not reconcile: %v\n", r.balanceErr)
	} else {
		r.balance.print(w)
	}
	fmt.Fprintf(w, "flash: %s\n", verdict)
	fmt.Fprintf(w, "\nthe five busiest seconds (by joins answered 2xx)\n\n%s", flashHeader)
	for _, k := range peak {
		k.print(w)
	}
	var tot flashRow
	for _, k := range rows {
		tot.Offered, tot.Sent, tot.LateOffered, tot.Answered = tot.Offered+k.Offered, tot.Sent+k.Sent, tot.LateOffered+k.LateOffered, tot.Answered+k.Answered
		tot.OK, tot.Limited, tot.Unavailable, tot.Failed, tot.Other = tot.OK+k.OK, tot.Limited+k.Limited, tot.Unavailable+k.Unavailable, tot.Failed+k.Failed, tot.Other+k.Other
		tot.Polls, tot.Claims = tot.Polls+k.Polls, tot.Claims+k.Claims
	}
	fmt.Fprintf(w, "| total, %d s | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s | | | %.2f | %.2f | %d | %d |\n", len(rows),
		tot.Offered, tot.Sent, tot.LateOffered, tot.Answered, tot.OK, tot.Limited, tot.Unavailable, tot.Failed+tot.Other,
		c.Join.P50.Round(10*time.Microsecond), c.Join.P99.Round(10*time.Microsecond), r.nodeCPU.Seconds()/secs, r.redisCPU.Seconds()/secs, tot.Polls, tot.Claims)
	fmt.Fprintf(w, "\nlandmarks: the first three seconds, the first sampled sold out, the last two\n\n%s", flashHeader)
	for i, k := range rows {
		first := k.soldOut && !slices.ContainsFunc(rows[:i], func(x flashRow) bool { return x.soldOut })
		if i < 3 || first || i >= len(rows)-2 {
			k.print(w)
		}
	}
	if full {
		fmt.Fprintf(w, "\nsecond by second\n\n%s", flashHeader)
		for _, k := range rows {
			k.print(w)
		}
	}
}
