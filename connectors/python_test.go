package connectors_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// python is Debian's interpreter, whose python3-jwt and
// python3-cryptography the middleware runs on (scripts/install-deps.sh),
// never a pyenv shim's.
const python = "/usr/bin/python3"

// pythonInstalled returns python once it imports PyJWT and cryptography;
// without them it skips, or fails under CI=true.
func pythonInstalled(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(python, "-c", "import jwt, cryptography; print(jwt.__version__, cryptography.__version__)").CombinedOutput()
	if err != nil {
		msg := "python3 with python3-jwt and python3-cryptography: " + strings.TrimSpace(string(out)) + "; run scripts/install-deps.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " [CI=true: a missing runtime is a failure]")
		}
		t.Skip(msg)
	}
	t.Logf("PyJWT and cryptography %s", strings.TrimSpace(string(out)))
	return python
}

// TestPythonMiddleware runs the WSGI and ASGI middleware's own tests
// (connectors/python/tests, python3 -m unittest) against a real node,
// each request through both: a genuine token from a real join passes as
// its user, by cookie or bearer, with the JWKS fetched once; no token
// redirects to the waiting page with a safe return path only; forged,
// tampered, expired, another event's, another audience's, alg none and
// HS256-keyed-with-the-public-key tokens redirect; unknown kids refetch
// at most once per min_refetch; a key rotation on the node is picked up;
// a JWKS unreachable with no cached key, or a stale one that cannot be
// renewed, fails closed (503, logged); a WebSocket without admission is
// closed. It fails when any of them fails, is skipped, or none ran.
func TestPythonMiddleware(t *testing.T) {
	py := pythonInstalled(t)
	f := startFixture(t)
	env := append(f.env, "PYTHONDONTWRITEBYTECODE=1")
	out := run(t, filepath.Join("python"), env, py, "-m", "unittest", "-v", "tests.test_middleware")
	t.Logf("python3 -m unittest:\n%s", tail(out, 4))
	if !bytes.HasSuffix(bytes.TrimRight(out, "\n"), []byte("\nOK")) {
		t.Errorf("python3 -m unittest: want a plain OK (nothing skipped):\n%s", out)
	}
	if bytes.Contains(out, []byte("Ran 0 tests")) {
		t.Errorf("python3 -m unittest ran no test:\n%s", out)
	}
	if missing := present(out, "key_rotation", "fails_closed", "HS256", "websocket"); len(missing) > 0 {
		t.Errorf("python3 -m unittest did not run %q:\n%s", missing, out)
	}
}
