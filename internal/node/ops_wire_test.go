package node_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestFailedStartReleases: when a late step of Start fails (its public or
// pprof address is taken), the listeners the earlier steps opened are
// closed again: their addresses can be bound at once, and a node starts
// on them.
func TestFailedStartReleases(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free := func() string { return fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)) }
	m1, p1, m2 := free(), free(), free()
	cases := []struct {
		name     string
		cfg      node.Config
		want     string   // in Start's error
		released []string // addresses Start must have let go of
	}{
		{"public address taken", node.Config{Addr: busy.Addr().String(), MetricsAddr: m1, PprofAddr: p1}, "listen", []string{m1, p1}},
		{"pprof address taken", node.Config{Addr: "127.0.0.1:0", MetricsAddr: m2, PprofAddr: busy.Addr().String()}, "pprof", []string{m2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.DataDir = t.TempDir()
			cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			n, err := node.Start(ctx, cfg)
			if err == nil {
				_ = n.Close(ctx)
				t.Fatal("Start succeeded on a taken address")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want an error about %s", err, tc.want)
			}
			for _, addr := range tc.released {
				l, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatalf("%s after the failed Start: %v (still held)", addr, err)
				}
				_ = l.Close()
			}
		})
	}
}
