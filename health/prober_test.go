package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/health"
	"github.com/anteroom/anteroom/internal/netguard"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestProbe probes a real loopback health endpoint: 2xx is healthy; an
// error status, a redirect (never followed) and a URL the node may not
// call are failing.
func TestProbe(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/down", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	allow := health.NewProber(nil, health.Config{AllowHTTP: true, Targets: loopback(t)})
	strict := health.NewProber(nil, health.Config{})
	for _, tc := range []struct {
		name    string
		p       *health.Prober
		url     string
		healthy bool
	}{
		{"2xx", allow, srv.URL + "/ok", true},
		{"503", allow, srv.URL + "/down", false},
		{"redirect not followed", allow, srv.URL + "/moved", false},
		{"http refused by default", strict, srv.URL + "/ok", false},
		{"nothing listening", allow, "http://127.0.0.1:1/ok", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.p.Probe(context.Background(), &event.HealthCheck{URL: tc.url, TimeoutSeconds: 2})
			if o.Healthy != tc.healthy || o.Source != "probe" || o.Detail == "" {
				t.Fatalf("probe %s: %+v, want healthy %v with a detail", tc.url, o, tc.healthy)
			}
		})
	}
}

// TestOneProbePerInterval runs three Probers (three nodes) on one
// redis-server against one sale: the shop's endpoint sees one probe per
// interval, not one per node, and the observations reach the sale's state.
func TestOneProbePerInterval(t *testing.T) {
	var probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { probes.Add(1) }))
	t.Cleanup(srv.Close)
	rdb := testenv.StartRedis(t).Client(t)
	hl := admission.NewHealth(rdb)
	sale := &admission.Sale{Config: event.Config{ID: "probed", EndsAt: time.Now().Add(time.Hour),
		Shop: event.Shop{Health: &event.HealthCheck{URL: srv.URL, IntervalSeconds: 1, TimeoutSeconds: 1, FailAfter: 1, RecoverAfter: 1}}}}
	nodes := []*health.Prober{}
	for range 3 {
		nodes = append(nodes, health.NewProber(hl, health.Config{AllowHTTP: true, Targets: loopback(t), OnError: func(err error) { t.Error(err) }}))
	}
	start := time.Now()
	for time.Since(start) < 2500*time.Millisecond { // bounded: a few hundred rounds
		for _, p := range nodes {
			p.Tick(context.Background(), sale)
		}
		time.Sleep(10 * time.Millisecond) // a tick of each node's loop
	}
	elapsed := time.Since(start)
	if most := int64(elapsed/time.Second) + 1; probes.Load() > most || probes.Load() < 1 {
		t.Fatalf("%d probes in %v by three nodes, want 1 to %d (one per interval)", probes.Load(), elapsed, most)
	}
	st, err := hl.State(context.Background(), "probed")
	if err != nil || st.Source != "probe" || st.Successes != probes.Load() {
		t.Fatalf("state %+v (%v), want %d healthy probes in a row", st, err, probes.Load())
	}
}

// loopback is the probes' policy in tests whose endpoints listen on
// loopback: allowed by name, as an operator would.
func loopback(t *testing.T) netguard.Policy {
	t.Helper()
	p, err := netguard.Allow(netguard.Loopback)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
