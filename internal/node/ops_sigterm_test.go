package node_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
)

// buildOpsBinary builds the command into a temporary directory.
func buildOpsBinary(t testing.TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = "/usr/local/go/bin/go"
	}
	bin := filepath.Join(t.TempDir(), "anteroom")
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/anteroom/anteroom/cmd/anteroom").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestOpsSIGTERMKeepsEvery201 runs `anteroom serve` as a process on
// redis-server and JetStream, drives concurrent claims at it, sends
// SIGTERM in the middle of the load, and checks that the process exits
// cleanly and that every claim the clients were answered 201 for has its
// order event on the stream.
func TestOpsSIGTERMKeepsEvery201(t *testing.T) {
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	bin := buildOpsBinary(t)
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	logPath := filepath.Join(dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "ANTEROOM_ADDR="+addr, "ANTEROOM_REDIS_URL="+r.URL(), "ANTEROOM_NATS_URL="+ns.URL(),
		"ANTEROOM_DATA_DIR="+filepath.Join(dir, "data"), "ANTEROOM_ADMIN_TOKEN=sigterm-test-admin-token",
		"ANTEROOM_DRAIN_DELAY=300ms", "ANTEROOM_LOG_FORMAT=text",
		"ANTEROOM_IDENTITY=header", "ANTEROOM_TRUSTED_PROXIES=127.0.0.1") // the test plays the gateway
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	failf := func(format string, a ...any) {
		t.Helper()
		log, _ := os.ReadFile(logPath)
		t.Fatalf(format+"\nserve log:\n%s", append(a, log)...)
	}
	base := "http://" + addr
	nodetest.WaitFor(t, "serve to be ready", 30*time.Second, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	n := &opsRemote{url: base, admin: "sigterm-test-admin-token"}
	sale := openSale(100000, 100, 0, 0, 100000)
	// A few users claim over and over: lift their claim rate limits.
	sale["limits"] = map[string]any{"claim": map[string]any{"user": map[string]any{"per_second": -1}, "device": map[string]any{"per_second": -1}}}
	n.create(t, "drain", sale)
	tokens := make([]string, 24)
	var wg sync.WaitGroup
	for i := range tokens {
		wg.Go(func() { tokens[i] = n.admit(t, "drain", fmt.Sprintf("u%d", i)) })
	}
	wg.Wait()

	var (
		mu      sync.Mutex
		granted []string
		signal  atomic.Bool
		after   atomic.Int64 // 201s answered after SIGTERM was sent
		bad     []string
	)
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				user := (w + i) % len(tokens)
				req, _ := http.NewRequest(http.MethodPost, base+"/events/drain/claim", nil)
				req.Header.Set("X-User-ID", fmt.Sprintf("u%d", user))
				req.Header.Set("Authorization", "Bearer "+tokens[user])
				req.Header.Set("Idempotency-Key", fmt.Sprintf("w%d-%d", w, i))
				resp, err := client.Do(req)
				if err != nil {
					if !signal.Load() {
						mu.Lock()
						bad = append(bad, err.Error())
						mu.Unlock()
					}
					return // after SIGTERM: the node stopped accepting
				}
				var body struct {
					ClaimID string `json:"claim_id"`
				}
				decodeErr := opsDecodeJSON(resp, &body)
				mu.Lock()
				switch {
				case resp.StatusCode == http.StatusCreated && decodeErr == nil:
					granted = append(granted, body.ClaimID)
					if signal.Load() {
						after.Add(1)
					}
				case resp.StatusCode == http.StatusConflict, resp.StatusCode == http.StatusTooManyRequests:
					// This user's limit or rate limit: try the others.
				default:
					bad = append(bad, fmt.Sprintf("claim answered %d", resp.StatusCode))
				}
				mu.Unlock()
			}
		})
	}
	nodetest.WaitFor(t, "claims under way", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(granted) >= 200 || len(bad) > 0
	})
	mu.Lock()
	atSignal := len(granted)
	mu.Unlock()
	signal.Store(true)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			failf("serve exited with %v after SIGTERM, want a clean exit", err)
		}
	case <-time.After(60 * time.Second):
		failf("serve still running 60s after SIGTERM")
	}
	wg.Wait()
	if len(bad) > 0 {
		failf("unexpected answers before SIGTERM: %v", bad[:min(len(bad), 5)])
	}
	if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), "shut down cleanly") {
		failf("no clean shutdown in the log")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	onStream := opsStreamClaims(t, ctx, ns.URL(), "drain")
	for _, id := range granted {
		if !onStream[id] {
			t.Errorf("claim %s was answered 201 but is not on the stream", id)
		}
	}
	totals, err := claim.NewStore(redis.NewClient(&redis.Options{Addr: r.Addr()})).Totals(ctx, claim.Sale{ID: "drain", Buckets: 1})
	if err != nil {
		t.Fatal(err)
	}
	if totals.Outbox != 0 {
		t.Errorf("outbox holds %d entries after shutdown, want 0 (flushed on exit)", totals.Outbox)
	}
	if int64(len(onStream)) != totals.Granted {
		t.Errorf("stream holds %d granted claims, Redis %d", len(onStream), totals.Granted)
	}
	t.Logf("%d claims answered 201 (%d at SIGTERM, %d during the drain), %d on the stream", len(granted), atSignal, after.Load(), len(onStream))
}

// streamClaims returns the claim ids of the granted order events of ev.
func opsStreamClaims(t *testing.T, ctx context.Context, url, ev string) map[string]bool {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := claim.ReadEvents(ctx, js, ev, "granted")
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("read stream: %v", err)
	}
	out := make(map[string]bool, len(evs))
	for _, e := range evs {
		out[e.ClaimID] = true
	}
	return out
}
