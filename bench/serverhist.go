package main

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serverHist is the node's own request-duration histogram of one route
// (anteroom_http_request_duration_seconds from /metrics): cumulative
// counts by upper bound, in the order /metrics lists them.
type serverHist struct {
	le    []float64
	count []float64
}

// scrapeHist reads the histogram of route and method, all statuses summed.
func scrapeHist(s *stack, route, method string) (serverHist, error) {
	resp, err := s.client.Get(s.metricsURL + "/metrics")
	if err != nil {
		return serverHist{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return serverHist{}, fmt.Errorf("/metrics: %d", resp.StatusCode)
	}
	var h serverHist
	sel := fmt.Sprintf(`method=%q,route=%q,`, method, route)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	byLe := map[float64]float64{}
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "anteroom_http_request_duration_seconds_bucket{") || !strings.Contains(line, sel) {
			continue
		}
		i := strings.Index(line, `le="`)
		j := strings.LastIndexByte(line, ' ')
		if i < 0 || j < 0 {
			continue
		}
		leStr := line[i+4 : i+4+strings.IndexByte(line[i+4:], '"')]
		le, err1 := strconv.ParseFloat(leStr, 64)
		n, err2 := strconv.ParseFloat(line[j+1:], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if _, ok := byLe[le]; !ok {
			h.le = append(h.le, le)
		}
		byLe[le] += n
	}
	for _, le := range h.le {
		h.count = append(h.count, byLe[le])
	}
	return h, sc.Err()
}

// quantileSince is the upper bound of the bucket holding quantile q of the
// requests counted between before and h: the server's own figure, from
// the request's first byte parsed to its answer written, without the
// client, the network or the generator.
func (h serverHist) quantileSince(before serverHist, q float64) (time.Duration, float64) {
	if len(h.count) == 0 {
		return 0, 0
	}
	diff := func(i int) float64 {
		if i < len(before.count) {
			return h.count[i] - before.count[i]
		}
		return h.count[i]
	}
	total := diff(len(h.count) - 1) // le="+Inf"
	for i, le := range h.le {
		if diff(i) >= q*total {
			return time.Duration(le * float64(time.Second)), total
		}
	}
	return 0, total
}
