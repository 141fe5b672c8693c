package crowd

import (
	"slices"
	"sync"
	"time"
)

// Endpoint summarises one endpoint's requests.
type Endpoint struct {
	Count         int
	PerSecond     float64
	P50, P95, P99 time.Duration
	Max           time.Duration
}

// recorder keeps every request duration per endpoint; a crowd is bounded,
// so keeping them all is affordable and exact.
type recorder struct {
	mu   sync.Mutex
	durs map[string][]time.Duration
}

func (r *recorder) add(endpoint string, d time.Duration) {
	r.mu.Lock()
	if r.durs == nil {
		r.durs = map[string][]time.Duration{}
	}
	r.durs[endpoint] = append(r.durs[endpoint], d)
	r.mu.Unlock()
}

func (r *recorder) summary(elapsed time.Duration) map[string]Endpoint {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]Endpoint, len(r.durs))
	for name, ds := range r.durs {
		s := slices.Clone(ds)
		slices.Sort(s)
		q := func(p float64) time.Duration { return s[min(int(p*float64(len(s))), len(s)-1)] }
		out[name] = Endpoint{
			Count: len(s), PerSecond: float64(len(s)) / max(elapsed.Seconds(), 1e-9),
			P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: s[len(s)-1],
		}
	}
	return out
}
