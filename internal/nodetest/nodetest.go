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

	"github.com/anteroom/anteroom/internal/node"
)

// Start starts a node with cfg on 127.0.0.1:0 (a temporary data directory
// and a silent logger unless cfg sets them) and closes it on cleanup.
func Start(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), Patience)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() {
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
