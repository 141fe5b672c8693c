// Package nodetest starts whole anteroom nodes for tests, on free loopback
// ports with temporary data directories, and talks to them over HTTP:
// requests (Call), sales (CreateSale), admission (Admit, AdmitUser) and
// polling (WaitFor). The node and end-to-end tests share it.
package nodetest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/anteroom/anteroom/internal/netguard"
	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/limit"
)

// Start starts a node with cfg on 127.0.0.1:0 (a temporary data directory,
// a silent logger, PatientLimiter and a metrics listener on 127.0.0.1:0,
// n.MetricsURL(), unless cfg sets them) and closes it on cleanup. Loopback
// targets (health URLs, webhooks, push endpoints) are allowed unless
// cfg.AllowPrivateTargets is set. In a test (not a benchmark) the node
// checks every exchange against its HTTP contract (Tap) unless cfg sets a
// Tap of its own.
func Start(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.AllowPrivateTargets == nil {
		// The tests' shops, webhook receivers and push stubs listen on
		// loopback: allowed by name, as an operator allows a private
		// network. A test of the refusal sets its own list.
		cfg.AllowPrivateTargets = netguard.Loopback
	}
	if cfg.MetricsAddr == "" {
		cfg.MetricsAddr = "127.0.0.1:0"
	}
	if cfg.Limiter == (limit.Config{}) {
		cfg.Limiter = PatientLimiter()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if _, bench := t.(*testing.B); cfg.Tap == nil && !bench {
		cfg.Tap = Tap(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Patience)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	if cfg.Tap != nil {
		tap(n.URL())
	}
	t.Cleanup(func() {
		defer untap(n.URL())
		ctx, cancel := context.WithTimeout(context.Background(), Patience)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			t.Errorf("close node: %v", err)
		}
	})
	return n
}

// HeaderMode returns cfg in header identity mode behind a trusted loopback
// proxy: the test plays the shop's gateway and names users with X-User-ID
// (cfg.IdentityHeader), which the node believes from 127.0.0.1 only.
// Loopback is added to cfg.TrustedProxies, so X-Forwarded-For from the
// test is believed too.
func HeaderMode(cfg node.Config) node.Config {
	cfg.Identity = "header"
	cfg.TrustedProxies = append(cfg.TrustedProxies[:len(cfg.TrustedProxies):len(cfg.TrustedProxies)], "127.0.0.1")
	return cfg
}

// PatientLimiter is the rate limiter's configuration for a test node: a
// test's Redis is on loopback, so a call slower than the production bounds
// (it fails after 100 ms, is slow after 25 ms) is the machine being busy,
// not Redis being slow, and degrading to node-local budgets then would
// change what the test sees (a fresh local budget lets a spent one pass).
// Its bounds are Patience. A test about degradation sets cfg.Limiter.
func PatientLimiter() limit.Config {
	return limit.Config{Timeout: Patience, SlowAfter: Patience}
}
