package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/anteroom/anteroom/internal/profparts"
)

const conns = 64

// measureStatus compares status polls (waiting users, verified ticket, no
// Redis) with the minimal fiber handler.
func measureStatus(ctx context.Context, s *stack, r *report) error {
	if err := s.createEvent(ctx, "bstatus", 10, 0.001, nil); err != nil {
		return err
	}
	tickets, err := s.joinMany(ctx, "bstatus", "s", 20000)
	if err != nil {
		return err
	}
	script, err := luaTickets(s.dir, tickets)
	if err != nil {
		return err
	}
	ceil, err := runWrk(s.ceilURL+"/", conns, r.d, "")
	if err != nil {
		return err
	}
	finish := s.profile("status", r.d)
	st, stCPU, err := cpuPerRequest(func() (wrkResult, error) {
		return runWrk(s.nodeURL+"/events/bstatus/status", conns, r.d, script)
	}, s.node, s.redis)
	if err != nil {
		return err
	}
	stParts, err := finish(profparts.Request, true)
	if err != nil {
		return err
	}
	// wrk on the same two cores pays for its Lua request function: the
	// ceiling sent the very same requests (same script, same bytes) is
	// the like-for-like baseline of the server's own cost.
	same, ceilCPU, err := cpuPerRequest(func() (wrkResult, error) {
		return runWrk(s.ceilURL+"/events/bstatus/status", conns, r.d, script)
	}, s.ceil)
	if err != nil {
		return err
	}
	r.command(ceil.Command)
	r.command(st.Command + "   # 20,000 tickets of waiting users, round robin")
	r.command(same.Command + "   # the ceiling sent the same requests")
	r.peaks["ceiling"], r.peaks["status"], r.peaks["ceiling-status"] = ceil.RPS, st.RPS, same.RPS
	ratio := st.RPS / ceil.RPS
	r.add("status requests/s vs minimal fiber handler", fmt.Sprintf("%.0f/s", st.RPS), fmt.Sprintf("%.0f/s", ceil.RPS), ratio, "≥ 0.8", ratio >= 0.8)
	ratio = st.RPS / same.RPS
	r.add("status requests/s vs minimal fiber handler sent the same requests", fmt.Sprintf("%.0f/s", st.RPS), fmt.Sprintf("%.0f/s", same.RPS), ratio, "≥ 0.8", ratio >= 0.8)
	addCPURow(r, "status", stCPU, ceilCPU, 0.8)
	noteParts(r, "status", stCPU, stParts)
	if st.Non2xx > 0 {
		r.note(fmt.Sprintf("status: %d non-2xx answers during the wrk run", st.Non2xx))
	}
	s.tickets = tickets
	return nil
}

// measureJoin compares joins (one Redis script each, a fresh user every
// request) with the same ceiling.
func measureJoin(ctx context.Context, s *stack, r *report) error {
	if err := s.createEvent(ctx, "bjoin", 10, 1, nil); err != nil {
		return err
	}
	script, err := luaJoins(s.dir)
	if err != nil {
		return err
	}
	finish := s.profile("join", r.d)
	j, jCPU, err := cpuPerRequest(func() (wrkResult, error) {
		return runWrk(s.nodeURL+"/events/bjoin/join", conns, r.d, script)
	}, s.node, s.redis)
	if err != nil {
		return err
	}
	jParts, err := finish(profparts.Request, true)
	if err != nil {
		return err
	}
	same, ceilCPU, err := cpuPerRequest(func() (wrkResult, error) {
		return runWrk(s.ceilURL+"/events/bjoin/join", conns, r.d, script)
	}, s.ceil)
	if err != nil {
		return err
	}
	r.command(j.Command + "   # a fresh X-User-ID per request")
	r.command(same.Command + "   # the ceiling sent the same requests")
	ceil := r.peaks["ceiling"]
	ratio := j.RPS / ceil
	r.peaks["join"] = j.RPS
	r.add("join requests/s vs minimal fiber handler", fmt.Sprintf("%.0f/s", j.RPS), fmt.Sprintf("%.0f/s", ceil), ratio, "≥ 0.5", ratio >= 0.5)
	ratio = j.RPS / same.RPS
	r.add("join requests/s vs minimal fiber handler sent the same requests", fmt.Sprintf("%.0f/s", j.RPS), fmt.Sprintf("%.0f/s", same.RPS), ratio, "≥ 0.5", ratio >= 0.5)
	addCPURow(r, "join", jCPU, ceilCPU, 0.5)
	noteParts(r, "join", jCPU, jParts)
	if j.Non2xx > 0 {
		r.note(fmt.Sprintf("join: %d non-2xx answers during the wrk run", j.Non2xx))
	}
	return measureJoinFloors(s, r, script, ceil)
}

// measureJoinFloors measures what a join costs whatever does it, against
// the ceiling of the join step (ceil, its requests/s): the ceiling
// answering a join's bytes (/floor/answer), and answering them after
// taking a number from Redis, with a round trip of its own (/floor/join)
// or in pipelines concurrent requests share (/floor/batched), sent the
// join step's requests. None does any of anteroom's work.
func measureJoinFloors(s *stack, r *report, script string, ceil float64) error {
	nodeBytes, err := answerBytes(s.nodeURL + "/events/bjoin/join")
	if err != nil {
		return err
	}
	floorBytes, err := answerBytes(s.ceilURL + "/floor/answer")
	if err != nil {
		return err
	}
	r.note(fmt.Sprintf("join floors: a join's answer is %d bytes from the node, %d from the ceiling's floors (status line, headers, body)", nodeBytes, floorBytes))
	floors := []struct{ path, what string }{
		{"/floor/answer", "join floor, a join's answer and nothing else"},
		{"/floor/join", "join floor, one Redis INCR and a join's answer"},
		{"/floor/batched", "join floor, one pipelined Redis INCR and a join's answer"},
	}
	for _, f := range floors {
		res, cost, err := cpuPerRequest(func() (wrkResult, error) {
			return runWrk(s.ceilURL+f.path, conns, r.d, script)
		}, s.ceil, s.ceilRedis)
		if err != nil {
			return err
		}
		r.command(res.Command + "   # " + f.what)
		ratio := res.RPS / ceil
		r.add(f.what+": requests/s vs minimal fiber handler", fmt.Sprintf("%.0f/s", res.RPS), fmt.Sprintf("%.0f/s", ceil), ratio, "—", false)
		if len(cost) == 2 {
			r.note(fmt.Sprintf("%s: server CPU per request %.1f µs in the ceiling and %.1f µs in redis-server", f.what, float64(cost[0])/1e3, float64(cost[1])/1e3))
		}
		if res.Non2xx > 0 {
			r.note(fmt.Sprintf("%s: %d non-2xx answers during the wrk run", f.what, res.Non2xx))
		}
	}
	return nil
}

// answerBytes sends one join (a fresh X-User-ID) to url and returns the
// size of its answer: status line and headers, and body.
func answerBytes(url string) (int, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.Set("X-User-ID", fmt.Sprintf("bytes-%d", time.Now().UnixNano()))
	if err := fasthttp.DoTimeout(req, resp, 10*time.Second); err != nil {
		return 0, err
	}
	if code := resp.StatusCode(); code/100 != 2 {
		return 0, fmt.Errorf("%s: %d %s", url, code, resp.Body())
	}
	return len(resp.Header.Header()) + len(resp.Body()), nil
}

// profile starts a CPU profile of s's node over the next d (less a
// second: the measurement it covers runs d), named name. Its finish waits
// for it, keeps it (-profiles) and breaks it down by rules.
func (s *stack) profile(name string, d time.Duration) func(rules []profparts.Rule, innermost bool) ([]profparts.Share, error) {
	path := filepath.Join(s.dir, name+".pprof")
	done := make(chan error, 1)
	go func() { done <- profparts.Fetch(context.Background(), s.pprofAddr, d-time.Second, path) }()
	return func(rules []profparts.Rule, innermost bool) ([]profparts.Share, error) {
		if err := <-done; err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := keepProfile(s.node.cmd.Path, path, name); err != nil {
			return nil, err
		}
		return profparts.Attribute(s.node.cmd.Path, path, rules, innermost)
	}
}

// noteParts notes the node's CPU per request of what (cost's first
// process) by part.
func noteParts(r *report, what string, cost cpuCost, parts []profparts.Share) {
	if len(parts) == 0 || len(cost) == 0 {
		return
	}
	r.note(fmt.Sprintf("%s: node CPU per request by part (pprof): %s", what, profparts.Format(parts, us(cost[0]))))
}

// addCPURow reports the server CPU a request cost (node and redis-server,
// from /proc) against the ceiling's for the same requests: the ratio the
// throughputs would have if the servers alone set the pace, which the
// load generator's share of the cores hardly moves.
func addCPURow(r *report, what string, cost, ceilCost cpuCost, goal float64) {
	node, ceil := cost.total(), ceilCost.total()
	if node <= 0 || ceil <= 0 {
		r.note(what + ": no CPU figures (no /proc)")
		return
	}
	if len(cost) == 2 {
		r.note(fmt.Sprintf("%s: server CPU per request %.1f µs in the node and %.1f µs in redis-server", what, float64(cost[0])/1e3, float64(cost[1])/1e3))
	}
	ratio := float64(ceil) / float64(node)
	r.add(what+" server CPU per request (node + redis-server) vs the ceiling's, same requests; ratio = ceiling / node", fmt.Sprintf("%.1f µs", float64(node)/1e3), fmt.Sprintf("%.1f µs", float64(ceil)/1e3),
		ratio, fmt.Sprintf("≥ %.1f", goal), ratio >= goal)
}

// measureCurve measures throughput against concurrency for the ceiling,
// status and join, for the chart.
func measureCurve(ctx context.Context, s *stack, r *report) error {
	if len(s.tickets) == 0 {
		return fmt.Errorf("no tickets (status step failed)")
	}
	script, err := luaTickets(s.dir, s.tickets)
	if err != nil {
		return err
	}
	joins, err := luaJoins(s.dir)
	if err != nil {
		return err
	}
	d := max(r.d/3, 2*time.Second)
	targets := []struct{ name, url, script string }{
		{"fiber ceiling", s.ceilURL + "/", ""},
		{"status", s.nodeURL + "/events/bstatus/status", script},
		{"join", s.nodeURL + "/events/bjoin/join", joins},
	}
	for _, t := range targets {
		c := curve{name: t.name}
		for _, n := range []int{2, 8, 32, 128, 512} {
			res, err := runWrk(t.url, n, d, t.script)
			if err != nil {
				return err
			}
			c.points = append(c.points, [2]float64{float64(n), res.RPS})
		}
		r.curves = append(r.curves, c)
	}
	r.command(fmt.Sprintf("wrk -t2 -c{2,8,32,128,512} -d%ds --latency …   # the chart", int(d.Seconds())))
	return nil
}
