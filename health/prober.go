// Package health polls each sale's shop health URL (event.HealthCheck)
// and counts what it sees toward the sale's health hold
// (admission.Health), which holds admission while the shop fails.
//
// Leaderless: every node runs a Prober; for each sale and interval one
// node wins the probe slot in Redis (SET NX PX) and probes, so the shop
// sees one request per interval however many nodes run. A probe is a GET
// bounded by the check's timeout that never follows a redirect: any 2xx is
// healthy, anything else (another status, a timeout, a refused connection)
// is failing. URLs follow the webhook rules: https unless the node allows
// http by name, and only to public addresses unless the node allows chosen
// networks by name (package netguard, judged at dial time). A failed
// probe's detail, which staff see (live.health.last), names the failure's
// class (netguard.Class: refused_target, tls, timeout ...) or the HTTP
// status, never the dial error's text.
package health

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/netguard"
)

// signals is what the Prober needs from admission.Health.
type signals interface {
	Observe(ctx context.Context, ev string, h *event.HealthCheck, o admission.Observation) (held, changed bool, err error)
	TakeProbe(ctx context.Context, ev string, interval time.Duration) (bool, error)
}

// Config tunes a Prober.
type Config struct {
	// AllowHTTP probes http URLs (ANTEROOM_WEBHOOK_ALLOW_HTTP); otherwise
	// only https.
	//
	// Default: false
	AllowHTTP bool
	// Targets says which addresses a probe may connect to
	// (ANTEROOM_ALLOW_PRIVATE_TARGETS).
	//
	// Default: public addresses only
	Targets netguard.Policy
	// OnError receives errors talking to Redis.
	//
	// Default: ignore them
	OnError func(error)
}

// Prober probes the health URLs of the sales it is given. Safe for
// concurrent use; one goroutine normally drives it (Run).
type Prober struct {
	signals signals
	cfg     Config
	client  *http.Client
	now     func() time.Time

	mu  sync.Mutex
	due map[string]time.Time // sale -> next probe on this node
}

// NewProber returns a Prober that records observations in s.
func NewProber(s signals, cfg Config) *Prober {
	if cfg.OnError == nil {
		cfg.OnError = func(error) {}
	}
	// Never follows a redirect: the URL staff set is the only target. The
	// probe's context bounds it.
	client := cfg.Targets.Client(0)
	return &Prober{signals: s, cfg: cfg, client: client, now: time.Now, due: map[string]time.Time{}}
}

// Run probes, every tick, each sale of sales whose check is due, until ctx
// is done. Sales that ended are left alone.
func (p *Prober) Run(ctx context.Context, tick time.Duration, sales func() []*admission.Sale) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var wg sync.WaitGroup // one slow shop does not delay the others' probes in a round
		for _, s := range sales() {
			wg.Go(func() { p.Tick(ctx, s) })
		}
		wg.Wait()
	}
}

// Tick probes sale s's health URL when it is due on this node and this
// node wins the interval's probe slot.
func (p *Prober) Tick(ctx context.Context, s *admission.Sale) {
	cfg := &s.Config
	h := cfg.Shop.Health
	now := p.now()
	if h == nil || h.URL == "" || !now.Before(cfg.EndsAt) {
		return
	}
	every := time.Duration(h.IntervalSeconds) * time.Second
	p.mu.Lock()
	due := p.due[cfg.ID]
	if now.Before(due) {
		p.mu.Unlock()
		return
	}
	p.due[cfg.ID] = now.Add(every)
	p.mu.Unlock()
	ok, err := p.signals.TakeProbe(ctx, cfg.ID, every)
	if err != nil {
		p.cfg.OnError(err)
		return
	}
	if !ok {
		return // another node probes this interval
	}
	o := p.Probe(ctx, h)
	if _, _, err := p.signals.Observe(ctx, cfg.ID, h, o); err != nil {
		p.cfg.OnError(err)
	}
}

// Probe GETs h's URL once and says what it saw.
func (p *Prober) Probe(ctx context.Context, h *event.HealthCheck) admission.Observation {
	fail := func(format string, a ...any) admission.Observation {
		return admission.Observation{Source: "probe", Detail: fmt.Sprintf(format, a...)}
	}
	u, err := url.Parse(h.URL)
	if err != nil || (u.Scheme != "https" && !(u.Scheme == "http" && p.cfg.AllowHTTP)) {
		return fail("health URL refused: https only unless the node sets ANTEROOM_WEBHOOK_ALLOW_HTTP")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(h.TimeoutSeconds)*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.URL, nil)
	if err != nil {
		return fail("health URL refused")
	}
	req.Header.Set("User-Agent", "anteroom-health/1")
	resp, err := p.client.Do(req)
	if err != nil {
		return fail("GET failed: %s", netguard.Class(err)) // the class only: the text names addresses
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail("HTTP %d", resp.StatusCode)
	}
	return admission.Observation{Healthy: true, Source: "probe", Detail: fmt.Sprintf("HTTP %d", resp.StatusCode)}
}
