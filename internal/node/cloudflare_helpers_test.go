package node_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/testenv"
)

// cfWorkerDir is the Cloudflare Worker package.
const cfWorkerDir = "../../deploy/gateway/cloudflare-worker"

var cfWorkerInstall struct {
	once sync.Once
	err  error
	out  []byte
}

// cfWorkerDeps returns the node binary after making sure the Worker
// package's locked dev dependencies (miniflare with its workerd binary,
// TypeScript) are installed: scripts/install-deps.sh installs them, and
// this runs `npm ci` once when they are missing. Without node or npm the
// test skips, except under CI=true.
func cfWorkerDeps(t *testing.T) string {
	t.Helper()
	nodeBin := testenv.Binary(t, "node")
	if _, err := os.Stat(filepath.Join(cfWorkerDir, "node_modules", "miniflare", "package.json")); err == nil {
		return nodeBin
	}
	npm := testenv.Binary(t, "npm")
	cfWorkerInstall.once.Do(func() {
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		cmd.Dir = cfWorkerDir
		cfWorkerInstall.out, cfWorkerInstall.err = cmd.CombinedOutput()
	})
	if cfWorkerInstall.err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", cfWorkerDir, cfWorkerInstall.err, cfWorkerInstall.out)
	}
	return nodeBin
}

// cfWorker is the Worker running in miniflare (test/serve.mjs).
type cfWorker struct {
	url string // with a trailing slash
	log *lockedBuffer
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startCFWorker runs the Worker in miniflare with wrangler.toml's vars
// overridden by vars; upstream stands for the zone's origin.
func startCFWorker(t *testing.T, nodeBin string, vars map[string]string, upstream string) *cfWorker {
	t.Helper()
	raw, err := json.Marshal(vars)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nodeBin, "test/serve.mjs")
	cmd.Dir = cfWorkerDir
	cmd.Env = append(os.Environ(), "WORKER_VARS="+string(raw), "WORKER_UPSTREAM="+upstream)
	w := &cfWorker{log: &lockedBuffer{}}
	cmd.Stderr = w.log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close() // serve.mjs stops when its input closes
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l, ok := <-line:
		var ready struct{ URL string }
		if !ok || json.Unmarshal([]byte(l), &ready) != nil || ready.URL == "" {
			t.Fatalf("miniflare did not start: %q\n%s", l, w.log)
		}
		w.url = ready.URL
	case <-time.After(60 * time.Second):
		t.Fatalf("miniflare did not start within a minute\n%s", w.log)
	}
	return w
}

// cfShop is a stub origin: it records who each request was for.
type cfShop struct {
	mu    sync.Mutex
	users []string
	paths []string
	posts []string
}

func (s *cfShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users = append(s.users, r.Header.Get("X-User-ID"))
	s.paths = append(s.paths, r.URL.RequestURI())
	if r.Method == http.MethodPost {
		s.posts = append(s.posts, string(body))
	}
	_, _ = io.WriteString(w, "shop page")
}

func (s *cfShop) seen() (users, paths, posts []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.users), slices.Clone(s.paths), slices.Clone(s.posts)
}

// jwksFront serves a node's JWKS, counting the fetches; while down it
// answers 503.
type jwksFront struct {
	node  string
	hits  atomic.Int64
	down  atomic.Bool
	proxy *httptest.Server
}

func newJWKSFront(t *testing.T, nodeURL string) *jwksFront {
	f := &jwksFront{node: nodeURL}
	f.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		if f.down.Load() {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.Get(f.node + "/.well-known/jwks.json")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(f.proxy.Close)
	return f
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// waitLog waits until the Worker's log holds every one of parts: workerd's
// log reaches the test through a pipe, a moment after the answer it
// explains.
func (w *cfWorker) waitLog(t *testing.T, what string, parts ...string) {
	t.Helper()
	testenv.Eventually(t, "the Worker's log "+what, 10*time.Second, func() error {
		log := w.log.String()
		for _, p := range parts {
			if !strings.Contains(log, p) {
				return fmt.Errorf("no %q in:\n%s", p, log)
			}
		}
		return nil
	})
}
