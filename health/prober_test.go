package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/health"
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
	allow := health.NewProber(nil, health.Config{AllowHTTP: true})
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
