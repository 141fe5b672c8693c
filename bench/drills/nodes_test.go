//go:build drills

package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/testenv"
)

// deployment is what every node of a drill shares (testenv.Deployment:
// the ticket secret, the signing key directory and the admin token), plus
// the nodes the drill runs in the test process.
type deployment struct {
	*testenv.Deployment
}

func newDeployment(t *testing.T) *deployment {
	t.Helper()
	d, err := testenv.NewDeployment(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	d.AdminTimeout = 3 * time.Minute // a rebuild answers when it is done
	return &deployment{d}
}

// inproc is a node running in the test process, as internal/node's tests
// run them.
type inproc struct {
	*node.Node
	once sync.Once
	err  error
}

// startNode starts an in-process node named name listening on addr
// ("127.0.0.1:port", so that a restarted node keeps its URL); it logs to
// a file in the deployment's directory and is closed when the test ends.
func (dp *deployment) startNode(t *testing.T, name, addr string, cfg node.Config) *inproc {
	t.Helper()
	logFile, err := os.OpenFile(filepath.Join(dp.Dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	cfg.Addr = addr
	cfg.DataDir = filepath.Join(dp.Dir, name)
	cfg.AdminToken, cfg.TicketSecret, cfg.SigningKeys = dp.Admin, dp.Secret, dp.Keys
	cfg.Log = slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if cfg.Identity == "" { // the drill's crowd plays the gateway: X-User-ID from loopback
		cfg.Identity, cfg.TrustedProxies = "header", append(cfg.TrustedProxies, "127.0.0.1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := node.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start node %s: %v", name, err)
	}
	in := &inproc{Node: n}
	t.Cleanup(func() { _ = in.stop() })
	return in
}

// stop closes the node once, within 15 s.
func (n *inproc) stop() error {
	n.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		n.err = n.Close(ctx)
	})
	return n.err
}

// loopback returns a free "127.0.0.1:port".
func loopback(t *testing.T) string { return fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t)) }

// spawn runs `anteroom <args>` as a child process of the deployment (see
// testenv.Deployment.Spawn) with env added; it is killed when the test
// ends (and, on Linux, when the test binary dies).
func (dp *deployment) spawn(t *testing.T, name string, env []string, args ...string) *testenv.Proc {
	t.Helper()
	dp.Bin = anteroomBinary(t)
	p, err := dp.Spawn(name, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// serve runs `anteroom serve` on addr and waits until /readyz answers 200.
func (dp *deployment) serve(t *testing.T, name, addr, redisURL, natsURL string) *testenv.Proc {
	t.Helper()
	p := dp.spawn(t, name, []string{"ANTEROOM_ADDR=" + addr, "ANTEROOM_REDIS_URL=" + redisURL, "ANTEROOM_NATS_URL=" + natsURL}, "serve")
	if err := p.WaitReady("http://"+addr, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// anteroomBinary builds cmd/anteroom once per run into a temporary
// directory that TestMain removes.
func anteroomBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "anteroom-drills-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "anteroom")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/anteroom/anteroom/cmd/anteroom").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func cleanBinary() {
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
}

// saleSpec is a drill's sale: it opens at once, admits rate people per
// second in arrival order (no shuffle window), and lasts an hour.
type saleSpec struct {
	supply  int64
	limit   int64
	rate    float64
	buckets int
}

// createSale creates the sale through the admin API of the first node and
// waits until every node shows it (nodes re-read sales every 100 ms).
func (dp *deployment) createSale(t *testing.T, id string, s saleSpec, bases ...string) {
	t.Helper()
	base := bases[0]
	now := time.Now().UTC().Truncate(time.Second)
	body, _ := json.Marshal(map[string]any{
		"name": "drill " + id, "supply": s.supply, "per_user_limit": s.limit, "buckets": s.buckets,
		"prequeue_opens_at": now.Add(-time.Second), "starts_at": now, "ends_at": now.Add(time.Hour),
		"random_window_seconds": 0, "admit_rate_per_second": s.rate, "claim_ttl_seconds": 1800,
	})
	if status, raw := dp.AdminCall(base, http.MethodPut, "/admin/events/"+id, body); status != http.StatusCreated {
		t.Fatalf("create sale %s: %d %s", id, status, raw)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, b := range bases {
		testenv.WaitFor(t, fmt.Sprintf("sale %s to be visible on %s", id, b), time.Until(deadline), func() bool {
			resp, err := http.Get(b + "/events/" + id)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	}
}
