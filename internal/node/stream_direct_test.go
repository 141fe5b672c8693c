package node

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestEmbeddedStreamDirectGets: on its embedded NATS server a node lets the
// order stream answer the fence's marker reads directly (allow_direct); on
// a server of the operator's, where a mirror with mirror_direct could
// answer them from behind, it does not.
func TestEmbeddedStreamDirectGets(t *testing.T) {
	ns := testenv.StartNATS(t)
	r := testenv.StartRedis(t)
	for name, c := range map[string]struct {
		cfg    Config
		direct bool
	}{
		"embedded": {Config{}, true},
		"external": {Config{NATSURL: ns.URL(), RedisURL: r.URL()}, false},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Addr, cfg.DataDir = "127.0.0.1:0", t.TempDir()
			cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			n, err := Start(ctx, cfg)
			if err != nil {
				t.Fatalf("start node: %v", err)
			}
			defer func() { _ = n.Close(ctx) }()
			js, err := jetstream.New(n.back.nc)
			if err != nil {
				t.Fatal(err)
			}
			st, err := js.Stream(ctx, claim.StreamName)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.CachedInfo().Config.AllowDirect; got != c.direct {
				t.Errorf("order stream allow_direct = %v, want %v", got, c.direct)
			}
		})
	}
}
