package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// openLoop sends rate requests per second for d at fixed instants, whatever
// the server's speed, and measures each latency from its scheduled instant
// (no coordinated omission). next returns the i-th request's path and
// headers. It also returns each request's lag: how late the generator
// itself started sending it, which counts in the latency but is no time
// of the server's.
//
// The schedule is dealt round robin to a fixed set of workers, each with
// a connection of its own (like wrk2): worker w sends requests w, w+W,
// w+2W, ... A worker sleeps once per W requests, not a dispatcher once per
// request, and no goroutine is started per request, so the generator
// costs the shared cores little and keeps its schedule; a request that
// finds its worker still waiting for an answer is sent late and counted
// from its scheduled instant.
func openLoop(_ context.Context, s *stack, method string, rate float64, d time.Duration, next func(i int) (string, map[string]string)) ([]time.Duration, []time.Duration, int, error) {
	total := int(rate * d.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	lat := make([]time.Duration, total)
	lag := make([]time.Duration, total)
	failed := make([]bool, total)
	workers := min(openLoopWorkers, max(total, 1))
	var wg sync.WaitGroup
	start := time.Now().Add(10 * time.Millisecond)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += workers {
				at := start.Add(time.Duration(i) * interval)
				if wait := time.Until(at); wait > 0 {
					time.Sleep(wait)
				}
				path, hdr := next(i)
				lag[i] = time.Since(at)
				code, err := s.fastDo(method, path, hdr)
				lat[i] = time.Since(at)
				failed[i] = err != nil || code >= 500 || code == http.StatusTooManyRequests
			}
		}()
	}
	wg.Wait()
	bad := 0
	for _, f := range failed {
		if f {
			bad++
		}
	}
	slices.Sort(lat)
	slices.Sort(lag)
	return lat, lag, bad, nil
}

// openLoopWorkers is the open-loop generator's workers (and connections):
// the same 64 as the closed-loop wrk runs.
const openLoopWorkers = conns

// closedLoop runs workers request loops for d, or until n requests (n < 0:
// no bound), and returns the answers with status want per second and the
// count of any other outcome.
func closedLoop(s *stack, workers int, d time.Duration, n, want int, next func(i int) (string, string, map[string]string)) (float64, int64) {
	rate, other, _ := closedLoopN(s, workers, d, n, want, next)
	return rate, other
}

// closedLoopN is closedLoop, also returning how many requests it sent.
func closedLoopN(s *stack, workers int, d time.Duration, n, want int, next func(i int) (string, string, map[string]string)) (float64, int64, int64) {
	var issued, ok, other atomic.Int64
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				i := int(issued.Add(1) - 1)
				if n >= 0 && i >= n {
					return
				}
				method, path, hdr := next(i)
				if code, err := s.fastDo(method, path, hdr); err == nil && code == want {
					ok.Add(1)
				} else {
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return float64(ok.Load()) / time.Since(start).Seconds(), other.Load(), min(issued.Load(), int64(max(n, 0)))
}

func pct(l []time.Duration, p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	return l[min(int(p*float64(len(l))), len(l)-1)]
}

// measureOpenLoop reports p99 latency of status and claim at 50% and 80%
// of their measured closed-loop peaks.
func measureOpenLoop(ctx context.Context, s *stack, r *report) error {
	d := max(r.d, 5*time.Second)
	// The generator shares the two cores with the server, and costs more
	// per request than wrk: "peak" here is what this generator reaches in
	// a closed loop, so 50% and 80% are loads it can actually offer.
	if len(s.tickets) > 0 {
		r.peaks["status-go"], _ = closedLoop(s, 64, d/2, -1, http.StatusOK, func(i int) (string, string, map[string]string) {
			return http.MethodGet, "/events/bstatus/status", map[string]string{"Authorization": "Bearer " + s.tickets[i%len(s.tickets)]}
		})
		r.note(fmt.Sprintf("open-loop peaks are the Go generator's own closed-loop peaks on the shared cores: status %.0f/s (wrk reached %.0f/s), claims %.0f/s", r.peaks["status-go"], r.peaks["status"], r.peaks["claim"]))
	}
	for _, share := range []float64{0.5, 0.8} {
		if peak := r.peaks["status-go"]; peak > 0 && len(s.tickets) > 0 {
			rate := peak * share
			before, herr := scrapeHist(s, "/events/:id/status", http.MethodGet)
			var gc0 runtime.MemStats
			runtime.ReadMemStats(&gc0)
			lat, lag, bad, err := openLoop(ctx, s, http.MethodGet, rate, d, func(i int) (string, map[string]string) {
				return "/events/bstatus/status", map[string]string{"Authorization": "Bearer " + s.tickets[i%len(s.tickets)]}
			})
			if err != nil {
				return err
			}
			var gc1 runtime.MemStats
			runtime.ReadMemStats(&gc1)
			p99 := pct(lat, 0.99)
			// Beside the generator's figure: the server's own p99 (its
			// request histogram) and the generator's lag, to tell a slow
			// server from a late generator.
			if after, err := scrapeHist(s, "/events/:id/status", http.MethodGet); err == nil && herr == nil {
				sp99, n := after.quantileSince(before, 0.99)
				goal := "—"
				if share == 0.5 {
					goal = "≤ 10 ms"
				}
				r.add(fmt.Sprintf("status p99 at %.0f%% of peak, server's own histogram (/metrics)", share*100), "≤ "+sp99.String(),
					fmt.Sprintf("%.0f requests", n), 0, goal, sp99 > 0 && sp99 <= 10*time.Millisecond)
			}
			r.note(fmt.Sprintf("status at %.0f%% of peak: generator lag (scheduled instant to send) p50 %s p99 %s max %s; generator GCs %d, pause total %s; load average %s",
				share*100, pct(lag, 0.5).Round(time.Microsecond), pct(lag, 0.99).Round(time.Microsecond), pct(lag, 1).Round(time.Microsecond),
				gc1.NumGC-gc0.NumGC, time.Duration(gc1.PauseTotalNs-gc0.PauseTotalNs), loadAverage()))
			if pct(lag, 0.99) > time.Millisecond {
				r.note(fmt.Sprintf("status at %.0f%% of peak: the generator itself started 1%% of its requests more than %s late: its p99 measures the generator on the shared cores, not the server (see the server's own histogram)", share*100, pct(lag, 0.99).Round(time.Millisecond)))
			}
			goal, met := "—", true
			if share == 0.5 {
				goal, met = "≤ 10 ms", p99 <= 10*time.Millisecond
			}
			if bad > 0 {
				r.note(fmt.Sprintf("status at %.0f%%: %d requests failed or were refused", share*100, bad))
			}
			r.add(fmt.Sprintf("status p99 at %.0f%% of peak (%.0f/s, open loop)", share*100, rate), p99.Round(10*time.Microsecond).String(),
				fmt.Sprintf("p50 %s", pct(lat, 0.5).Round(10*time.Microsecond)), 0, goal, met && bad == 0)
		}
		if peak := r.peaks["claim"]; peak > 0 && s.claimNext < len(s.claimTokens) {
			rate := peak * share
			first := s.claimNext
			toks := s.claimTokens[first:]
			n := min(int(rate*d.Seconds()), len(toks))
			lat, _, bad, err := openLoop(ctx, s, http.MethodPost, rate, time.Duration(float64(n)/rate*float64(time.Second)), func(i int) (string, map[string]string) {
				// The caller names the token's user, as the gateway would
				// (mintTokens issues token i to user c<i>).
				return "/events/bclaim/claim", map[string]string{"Authorization": "Bearer " + toks[i], "X-User-ID": fmt.Sprintf("c%d", first+i)}
			})
			if err != nil {
				return err
			}
			s.claimNext += n
			if bad > 0 {
				r.note(fmt.Sprintf("claim at %.0f%%: %d requests failed or were refused", share*100, bad))
			}
			r.add(fmt.Sprintf("claim p99 at %.0f%% of peak (%.0f/s, open loop)", share*100, rate), pct(lat, 0.99).Round(10*time.Microsecond).String(),
				fmt.Sprintf("p50 %s", pct(lat, 0.5).Round(10*time.Microsecond)), 0, "—", bad == 0)
		}
	}
	r.command(fmt.Sprintf("open loop: requests at fixed instants for %s, latency from the scheduled instant", d))
	return nil
}

// loadAverage is /proc/loadavg's 1-minute figure and runnable/total
// tasks: how many others wanted the cores during the measurement.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return "unknown"
	}
	return f[0] + " (runnable/total " + f[3] + ")"
}
