package jsclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// pkgDir is the JavaScript package; assetsDir holds the committed copies
// of its build that the node embeds.
var (
	pkgDir    = filepath.Join("..", "..", "web", "pages", "js", "anteroom")
	assetsDir = filepath.Join("..", "..", "web", "pages", "assets")
)

// built is the files the package's build writes and the node serves.
var built = []string{"anteroom.js", "anteroom.d.ts"}

var buildOnce struct {
	sync.Once
	out []byte
	err error
}

// run runs bin with args in the package directory and fails the test
// with its output when it fails.
func run(t *testing.T, env []string, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*nodetest.Patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = pkgDir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return out
}

// installed makes sure the package's node_modules holds the locked
// TypeScript (npm ci when it does not) and returns node's path.
func installed(t *testing.T) string {
	t.Helper()
	nodeBin := testenv.Binary(t, "node")
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	raw, err := os.ReadFile(filepath.Join(pkgDir, "package-lock.json"))
	if err == nil {
		err = json.Unmarshal(raw, &lock)
	}
	if err != nil {
		t.Fatalf("package-lock.json: %v", err)
	}
	want := lock.Packages["node_modules/typescript"].Version
	var have struct{ Version string }
	raw, err = os.ReadFile(filepath.Join(pkgDir, "node_modules", "typescript", "package.json"))
	if err == nil && json.Unmarshal(raw, &have) == nil && have.Version == want {
		return nodeBin
	}
	npm := testenv.Binary(t, "npm")
	t.Logf("node_modules has TypeScript %q, the lock %q: npm ci", have.Version, want)
	run(t, nil, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	return nodeBin
}

// build runs the package's build (dist/) once per test binary.
func build(t *testing.T) {
	t.Helper()
	nodeBin := installed(t)
	buildOnce.Do(func() {
		cmd := exec.Command(nodeBin, "build.mjs")
		cmd.Dir = pkgDir
		buildOnce.out, buildOnce.err = cmd.CombinedOutput()
	})
	if buildOnce.err != nil {
		t.Fatalf("node build.mjs: %v\n%s", buildOnce.err, buildOnce.out)
	}
}

// TestClientPackageBuilt rebuilds the package and fails when the
// committed web/pages/assets/anteroom.js or anteroom.d.ts differ from
// what it builds: they are generated, and the node serves them.
func TestClientPackageBuilt(t *testing.T) {
	build(t)
	for _, name := range built {
		got, err := os.ReadFile(filepath.Join(assetsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(pkgDir, "dist", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("web/pages/assets/%s differs from what web/pages/js/anteroom builds: edit src/anteroom.ts, then run `npm run embed` there", name)
		}
		if !bytes.HasPrefix(got, []byte("// Generated from web/pages/js/anteroom/src/anteroom.ts")) || !bytes.Contains(got[:300], []byte("do not edit")) {
			t.Errorf("web/pages/assets/%s does not start with its generated-file header", name)
		}
	}
}

// TestClientPackageTypes type-checks the package and an app that uses
// its declarations (test/consumer.ts, whose expected errors must still
// be errors).
func TestClientPackageTypes(t *testing.T) {
	build(t)
	nodeBin := installed(t)
	tsc := filepath.Join("node_modules", "typescript", "bin", "tsc")
	run(t, nil, nodeBin, tsc, "--noEmit", "-p", "tsconfig.json")
	run(t, nil, nodeBin, tsc, "--noEmit", "-p", filepath.Join("test", "tsconfig.json"))
}

// TestClientPackageInNode runs the package's Node tests (node --test)
// against a real node in header identity mode: join, polls at the
// server's pace, Retry-After on 429 and 503, one Idempotency-Key across a
// claim's retries, admission, claims and release, network errors and
// refusals. It fails when any of them fails or is skipped, and checks
// that the node serves the committed build.
func TestClientPackageInNode(t *testing.T) {
	build(t)
	nodeBin := installed(t)
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL()}))

	for name, ctype := range map[string]string{"anteroom.js": "text/javascript; charset=utf-8", "anteroom.d.ts": "application/typescript; charset=utf-8"} {
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/assets/"+name, nil, nil)
		want, err := os.ReadFile(filepath.Join(assetsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != http.StatusOK || a.Header.Get("Content-Type") != ctype || !bytes.Equal(a.Raw, want) {
			t.Errorf("GET /assets/%s: %d %q, %d bytes; want 200 %q with the committed %d bytes", name, a.Status, a.Header.Get("Content-Type"), len(a.Raw), ctype, len(want))
		}
	}

	start := time.Now()
	out := run(t, []string{"ANTEROOM_URL=" + n.URL(), "ANTEROOM_ADMIN_TOKEN=" + n.AdminToken},
		nodeBin, "--test", "--test-reporter=tap", filepath.Join("test", "backoff.test.mjs"), filepath.Join("test", "node.test.mjs"))
	t.Logf("node --test (%s):\n%s", time.Since(start).Round(time.Millisecond), tail(out, 12))
	for _, bad := range []string{"\n# fail 0\n", "\n# skipped 0\n", "\n# cancelled 0\n"} {
		if !bytes.Contains(out, []byte(bad)) {
			t.Errorf("node --test: want %q in its summary:\n%s", strings.TrimSpace(bad), out)
		}
	}
	if !bytes.Contains(out, []byte("\n# pass ")) || bytes.Contains(out, []byte("\n# pass 0\n")) {
		t.Errorf("node --test ran no test:\n%s", out)
	}
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
