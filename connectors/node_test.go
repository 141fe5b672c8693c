package connectors_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anteroom/anteroom/internal/testenv"
)

var nodeDir = filepath.Join("node")

// nodeInstalled makes sure node_modules holds the locked jose and Express
// (npm ci when it does not) and returns node's path.
func nodeInstalled(t *testing.T) string {
	t.Helper()
	nodeBin := testenv.Binary(t, "node")
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	raw, err := os.ReadFile(filepath.Join(nodeDir, "package-lock.json"))
	if err == nil {
		err = json.Unmarshal(raw, &lock)
	}
	if err != nil {
		t.Fatalf("package-lock.json: %v", err)
	}
	for _, pkg := range []string{"jose", "express"} {
		want := lock.Packages["node_modules/"+pkg].Version
		var have struct{ Version string }
		raw, err = os.ReadFile(filepath.Join(nodeDir, "node_modules", pkg, "package.json"))
		if err == nil && json.Unmarshal(raw, &have) == nil && have.Version == want {
			continue
		}
		t.Logf("node_modules has %s %q, the lock %q: npm ci", pkg, have.Version, want)
		run(t, nodeDir, nil, testenv.Binary(t, "npm"), "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		break
	}
	return nodeBin
}

// TestNodeMiddleware runs the Express/Connect middleware's own tests
// (connectors/node/test, node --test) against a real node: a genuine
// token from a real join passes as its user, by cookie or bearer, with
// the JWKS fetched once; no token redirects to the waiting page with a
// safe return path only; forged, tampered, expired, another event's,
// another audience's, alg none and HS256-keyed-with-the-public-key tokens
// redirect; unknown kids refetch at most once per minRefetchSeconds; a
// key rotation on the node is picked up; a JWKS unreachable with no
// cached key, or a stale one that cannot be renewed, fails closed (503).
// It fails when any of them fails, is skipped, or none ran.
func TestNodeMiddleware(t *testing.T) {
	nodeBin := nodeInstalled(t)
	f := startFixture(t)
	out := run(t, nodeDir, f.env, nodeBin, "--test", "--test-reporter=tap", filepath.Join("test", "middleware.test.mjs"))
	t.Logf("node --test:\n%s", tail(out, 9))
	for _, want := range []string{"\n# fail 0\n", "\n# skipped 0\n", "\n# cancelled 0\n", "\n# todo 0\n"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("node --test: want %q in its summary:\n%s", strings.TrimSpace(want), out)
		}
	}
	if !bytes.Contains(out, []byte("\n# pass ")) || bytes.Contains(out, []byte("\n# pass 0\n")) {
		t.Errorf("node --test ran no test:\n%s", out)
	}
	if missing := present(out, "key rotation", "fails closed", "HS256"); len(missing) > 0 {
		t.Errorf("node --test did not run %q:\n%s", missing, out)
	}
}
