package health_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/health"
)

// TestProbeRefusesPrivateTargets: by default a shop health URL may not
// target loopback, private, link-local or metadata addresses: the dial is
// refused (the loopback endpoint sees nothing) and the observation names
// the class of failure, never the dial error's text (staff see it in
// live.health.last).
func TestProbeRefusesPrivateTargets(t *testing.T) {
	var probes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { probes.Add(1) }))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	p := health.NewProber(nil, health.Config{AllowHTTP: true})
	for _, target := range []string{
		srv.URL + "/ok",
		"http://[::ffff:127.0.0.1]:" + u.Port() + "/ok",
		"http://localhost:" + u.Port() + "/ok",
		"https://169.254.169.254/latest/meta-data/",
		"https://192.168.1.1/health",
		"https://100.64.0.1/health",
	} {
		o := p.Probe(context.Background(), &event.HealthCheck{URL: target, TimeoutSeconds: 2})
		if o.Healthy || o.Detail != "GET failed: refused_target" {
			t.Errorf("probe %s: %+v, want failing with GET failed: refused_target", target, o)
		}
	}
	if n := probes.Load(); n != 0 {
		t.Errorf("the loopback endpoint saw %d probes, want 0", n)
	}
	// The operator's setting lets a chosen network through.
	allowed := health.NewProber(nil, health.Config{AllowHTTP: true, Targets: loopback(t)})
	if o := allowed.Probe(context.Background(), &event.HealthCheck{URL: srv.URL + "/ok", TimeoutSeconds: 2}); !o.Healthy || probes.Load() != 1 {
		t.Errorf("with loopback allowed: %+v, %d probes; want healthy, 1", o, probes.Load())
	}
}
