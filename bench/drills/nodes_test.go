//go:build drills

package drills

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/testenv"
)

// deployment is what every node of a drill shares: the ticket secret, the
// signing key directory and the admin token, as nodes behind one load
// balancer do.
type deployment struct {
	dir    string
	admin  string
	secret []byte
	keys   string
}

func newDeployment(t *testing.T) *deployment {
	dir := t.TempDir()
	secret := make([]byte, 32) // a node refuses a patterned secret
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	return &deployment{dir: dir, admin: "drill-admin-token-0123456789", secret: secret, keys: filepath.Join(dir, "keys")}
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
	logFile, err := os.OpenFile(filepath.Join(dp.dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	cfg.Addr = addr
	cfg.DataDir = filepath.Join(dp.dir, name)
	cfg.AdminToken, cfg.TicketSecret, cfg.SigningKeys = dp.admin, dp.secret, dp.keys
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

// proc is `anteroom <command>` running as a child process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error
}

// spawn runs the anteroom binary with args and the deployment's settings
// plus env ("ANTEROOM_X=v"), logging to a file; it is killed when the test
// ends (and, on Linux, when the test binary dies).
func (dp *deployment) spawn(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	bin := anteroomBinary(t)
	p := &proc{name: name, log: filepath.Join(dp.dir, name+".log"), exited: make(chan struct{})}
	logFile, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(cleanEnv(), "ANTEROOM_DATA_DIR="+filepath.Join(dp.dir, name), "ANTEROOM_ADMIN_TOKEN="+dp.admin,
		"ANTEROOM_TICKET_SECRET="+hex.EncodeToString(dp.secret), "ANTEROOM_SIGNING_KEYS="+dp.keys,
		"ANTEROOM_LOG_FORMAT=text", "ANTEROOM_DRAIN_DELAY=0s",
		// The drill's crowd plays the gateway: X-User-ID from loopback.
		"ANTEROOM_IDENTITY=header", "ANTEROOM_TRUSTED_PROXIES=127.0.0.1")
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	setProcAttr(p.cmd)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	return p
}

// cleanEnv is the environment without ANTEROOM_* settings of the caller.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ANTEROOM_") {
			out = append(out, kv)
		}
	}
	return out
}

// kill sends SIGKILL and waits for the process to end.
func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// running reports whether the process has not exited.
func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tail returns the last lines of the process's log.
func (p *proc) tail(n int) string {
	raw, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// serve runs `anteroom serve` on addr and waits until /readyz answers 200.
func (dp *deployment) serve(t *testing.T, name, addr, redisURL, natsURL string) *proc {
	t.Helper()
	p := dp.spawn(t, name, []string{"ANTEROOM_ADDR=" + addr, "ANTEROOM_REDIS_URL=" + redisURL, "ANTEROOM_NATS_URL=" + natsURL}, "serve")
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if !p.running() || time.Now().After(deadline) {
			t.Fatalf("%s not ready (running %v):\n%s", name, p.running(), p.tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
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
	if status, raw := dp.adminCall(base, http.MethodPut, "/admin/events/"+id, body); status != http.StatusCreated {
		t.Fatalf("create sale %s: %d %s", id, status, raw)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, b := range bases {
		for {
			resp, err := http.Get(b + "/events/" + id)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("sale %s not visible on %s", id, b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// adminCall sends an admin request and returns the status and body.
func (dp *deployment) adminCall(base, method, path string, body []byte) (int, []byte) {
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Header.Set("Authorization", "Bearer "+dp.admin)
	req.Header.Set("Content-Type", "application/json")
	client := &http.Client{Timeout: 3 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}
