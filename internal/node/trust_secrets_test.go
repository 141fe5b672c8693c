package node_test

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// startErr starts a node with cfg (closing it if it starts) and returns
// the error Start gave.
func startErr(t *testing.T, cfg node.Config) error {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Tap = nodetest.Tap(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err == nil {
		// Close only once it serves: a Close racing the listener's start
		// never returns.
		nodetest.WaitFor(t, "the node to serve", 10*time.Second, func() bool {
			resp, err := http.Get(n.URL() + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil
		})
		_ = n.Close(ctx)
	}
	return err
}

// TestWeakSecretsRefused: a node does not start with a ticket secret or
// admin token that is zero, patterned, short or a placeholder shipped in
// the repository, whether configured or found in the data directory; the
// message names the setting and never shows the value.
func TestWeakSecretsRefused(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	goodSecret, _ := hex.DecodeString("8c1f5e0a9b3d7c2e4f6a1b8d0c3e5f7a9b2d4c6e8f0a1c3e5b7d9f2a4c6e8b0d")
	const goodAdmin = "f3a9c1e7b5d2084a6c9e1f3b5d7a"
	fromHex := func(s string) []byte { b, _ := hex.DecodeString(s); return b }
	cases := map[string]struct {
		secret     []byte
		admin      string
		file, body string // a file written into the data directory
		want       string
	}{
		"zero ticket secret":        {secret: make([]byte, 32), admin: goodAdmin, want: "ANTEROOM_TICKET_SECRET"},
		"repeated byte secret":      {secret: fromHex(strings.Repeat("5a", 32)), admin: goodAdmin, want: "ANTEROOM_TICKET_SECRET"},
		"periodic secret":           {secret: fromHex(strings.Repeat("deadbeef", 8)), admin: goodAdmin, want: "ANTEROOM_TICKET_SECRET"},
		"low-entropy secret":        {secret: fromHex(strings.Repeat("0102", 12) + "0304050607080900"), admin: goodAdmin, want: "ANTEROOM_TICKET_SECRET"},
		"short admin token":         {secret: goodSecret, admin: "f3a9c1e7b5d2084a6c9e1f3", want: "ANTEROOM_ADMIN_TOKEN"},
		"compose admin placeholder": {secret: goodSecret, admin: "compose-admin-token-change-me", want: "ANTEROOM_ADMIN_TOKEN"},
		"k8s admin placeholder":     {secret: goodSecret, admin: "REPLACE-with-openssl-rand-hex-24", want: "ANTEROOM_ADMIN_TOKEN"},
		"zero secret file":          {admin: goodAdmin, file: "ticket-secret", body: strings.Repeat("0", 64) + "\n", want: "ticket-secret"},
		"weak admin token file":     {secret: goodSecret, file: "admin-token", body: "short-admin-token-x\n", want: "admin-token"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.file != "" {
				if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := startErr(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), DataDir: dir, TicketSecret: tc.secret, AdminToken: tc.admin})
			if err == nil {
				t.Fatalf("the node started")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "weak") {
				t.Errorf("error %q: want it to name %s and say the value is weak", err, tc.want)
			}
			if tc.admin != "" && strings.Contains(err.Error(), tc.admin) {
				t.Errorf("error %q shows the admin token", err)
			}
		})
	}
	// Strong values and generated ones start.
	if err := startErr(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TicketSecret: goodSecret, AdminToken: goodAdmin}); err != nil {
		t.Errorf("strong secrets: %v", err)
	}
	if err := startErr(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}); err != nil {
		t.Errorf("generated secrets: %v", err)
	}
}
