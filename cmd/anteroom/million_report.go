package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// usedMemory is Redis's used_memory (INFO memory).
func usedMemory(ctx context.Context, rdb *redis.Client) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no used_memory in INFO memory")
}

// scrapeLines calls f with every line of base's /metrics (base: a node's
// metrics listener).
func scrapeLines(ctx context.Context, base string, f func(string)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/metrics: %d", base, resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f(sc.Text())
	}
	return sc.Err()
}

// scrapeSale reads one metric of event ev from the first of the nodes'
// metrics listeners (Config.MetricsAddr: /metrics is not on the public
// address).
func scrapeSale(ctx context.Context, metricsURLs []string, ev, name string) (float64, error) {
	if len(metricsURLs) == 0 {
		return 0, fmt.Errorf("no metrics listener given")
	}
	base := metricsURLs[0]
	var v float64
	want := fmt.Sprintf(`%s{event=%q} `, name, ev)
	err := scrapeLines(ctx, base, func(line string) {
		if rest, ok := strings.CutPrefix(line, want); ok {
			v, _ = strconv.ParseFloat(rest, 64)
		}
	})
	return v, err
}

// statusHist is the nodes' own histogram of one route's requests (all
// nodes and statuses summed): cumulative counts by upper bound.
type statusHist struct {
	le    []float64
	count map[float64]float64
}

// scrapeStatusHist is the nodes' histogram of status polls.
func scrapeStatusHist(ctx context.Context, urls []string) (statusHist, error) {
	return scrapeHist(ctx, urls, "GET", "/events/:id/status")
}

// scrapeHist is the nodes' histogram of the requests of method to route,
// read from their metrics listeners urls.
func scrapeHist(ctx context.Context, urls []string, method, route string) (statusHist, error) {
	h := statusHist{count: map[float64]float64{}}
	want := fmt.Sprintf(`method=%q,route=%q,`, method, route)
	for _, u := range urls {
		err := scrapeLines(ctx, u, func(line string) {
			if !strings.HasPrefix(line, "anteroom_http_request_duration_seconds_bucket{") || !strings.Contains(line, want) {
				return
			}
			i, j := strings.Index(line, `le="`), strings.LastIndexByte(line, ' ')
			if i < 0 || j < 0 {
				return
			}
			le, err1 := strconv.ParseFloat(line[i+4:i+4+strings.IndexByte(line[i+4:], '"')], 64)
			n, err2 := strconv.ParseFloat(line[j+1:], 64)
			if err1 != nil || err2 != nil {
				return
			}
			if _, ok := h.count[le]; !ok {
				h.le = append(h.le, le)
			}
			h.count[le] += n
		})
		if err != nil {
			return h, err
		}
	}
	return h, nil
}

// quantileSince is the upper bound of the bucket holding quantile q of
// the status requests counted between before and h, and their number.
func (h statusHist) quantileSince(before statusHist, q float64) (time.Duration, float64) {
	if len(h.le) == 0 {
		return 0, 0
	}
	total := h.count[h.le[len(h.le)-1]] - before.count[h.le[len(h.le)-1]] // le="+Inf"
	for _, le := range h.le {
		if h.count[le]-before.count[le] >= q*total {
			return time.Duration(le * float64(time.Second)), total
		}
	}
	return 0, total
}

// print writes the report.
func (r *millionReport) print(w io.Writer) {
	c, o := r.crowd, r.opts
	secs := r.elapsed.Seconds()
	fmt.Fprintf(w, "\nmillion: %d people on %d nodes, admitting %.0f/s, %s\n", o.people, len(o.urls), o.rate, r.elapsed.Round(time.Second))
	fmt.Fprintf(w, "joined               %d in %s: %.0f joins/s (join p50 %s, p99 %s)\n", c.Joined, c.JoinTime.Round(100*time.Millisecond),
		float64(c.Joined)/max(c.JoinTime.Seconds(), 1e-9), c.Join.P50.Round(10*time.Microsecond), c.Join.P99.Round(10*time.Microsecond))
	fmt.Fprintf(w, "status polls         %d answered, %.0f/s over the run; asked for at the end %.0f/s by %d waiting\n",
		c.Polls, float64(c.Polls)/secs, c.Asked, c.Waiting)
	fmt.Fprintf(w, "status p99           client %s (p50 %s, max %s); server's own histogram %s over %.0f requests\n",
		c.Status.P99.Round(10*time.Microsecond), c.Status.P50.Round(10*time.Microsecond), c.Status.Max.Round(time.Millisecond), r.serverP99, r.serverCount)
	fmt.Fprintf(w, "polls on schedule    %d sent more than 1 s after the instant asked for (lag p50 %s, p99 %s)\n",
		c.Late, c.Lag.P50.Round(time.Millisecond), c.Lag.P99.Round(time.Millisecond))
	fmt.Fprintf(w, "admitted             %d seen by the crowd; errors %d\n", c.Admitted, c.Errors)
	if mem := r.memAfter - r.memBefore; c.Joined > 0 {
		fmt.Fprintf(w, "redis memory         %+d bytes for %d people: %.1f bytes per person\n", mem, c.Joined, float64(mem)/float64(c.Joined))
	}
	fmt.Fprintf(w, "cpu                  nodes %.1f s (%.2f cores), redis-server %.1f s (%.2f cores), generator %.1f s (%.2f cores); machine busy %.2f of %.0f cores; load %s\n",
		r.nodeCPU.Seconds(), r.nodeCPU.Seconds()/secs, r.redisCPU.Seconds(), r.redisCPU.Seconds()/secs,
		r.selfCPU.Seconds(), r.selfCPU.Seconds()/secs, r.machineBusy.Seconds()/secs, r.machine.Seconds()/secs, r.load)
	if r.crowd.Polls > 0 {
		fmt.Fprintf(w, "node cpu per request %.1f µs (joins and polls)\n", float64(r.nodeCPU.Microseconds())/float64(c.Polls+c.Joined))
	}
	fmt.Fprintf(w, "\n%8s %9s %12s %12s %10s %12s\n", "t", "joined", "admitted/s", "(configured)", "polls/s", "asked/s")
	for i := 1; i < len(r.samples); i++ {
		a, b := r.samples[i-1], r.samples[i]
		dt := (b.at - a.at).Seconds()
		fmt.Fprintf(w, "%7.0fs %9d %12.0f %12.0f %10.0f %12.0f\n", b.at.Seconds(), b.joined,
			(b.admitted-a.admitted)/dt, o.rate, float64(b.polls-a.polls)/dt, b.asked)
	}
}
