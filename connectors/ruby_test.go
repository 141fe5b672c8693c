package connectors_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ruby is Debian's interpreter, whose ruby-jwt and ruby-rbnacl the
// middleware runs on (scripts/install-deps.sh).
const ruby = "/usr/bin/ruby"

// rubyInstalled returns ruby once it loads ruby-jwt and RbNaCl (libsodium);
// without them it skips, or fails under CI=true.
func rubyInstalled(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(ruby, "-e", `require "jwt"; require "rbnacl"; puts "ruby-jwt #{JWT::VERSION::STRING}, RbNaCl #{RbNaCl::VERSION}"`).CombinedOutput()
	if err != nil {
		msg := "ruby with ruby-jwt and ruby-rbnacl: " + strings.TrimSpace(string(out)) + "; run scripts/install-deps.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " [CI=true: a missing runtime is a failure]")
		}
		t.Skip(msg)
	}
	t.Log(strings.TrimSpace(string(out)))
	return ruby
}

// minitestSummary is minitest's closing line.
var minitestSummary = regexp.MustCompile(`(?m)^(\d+) runs, \d+ assertions, (\d+) failures, (\d+) errors, (\d+) skips$`)

// TestRubyMiddleware runs the Rack middleware's own tests
// (connectors/ruby/test, minitest) against a real node: a genuine token
// from a real join passes as its user, by cookie or bearer, with the JWKS
// fetched once; no token redirects to the waiting page with a safe return
// path only; forged, tampered, expired, another event's, another
// audience's, alg none and HS256-keyed-with-the-public-key tokens
// redirect; unknown kids refetch at most once per min_refetch; a key
// rotation on the node is picked up; a JWKS unreachable with no cached
// key, or a stale one that cannot be renewed, fails closed (503, logged).
// It fails when any of them fails, is skipped, or none ran.
func TestRubyMiddleware(t *testing.T) {
	rb := rubyInstalled(t)
	f := startFixture(t)
	out := run(t, filepath.Join("ruby"), f.env, rb, "-Ilib", "test/middleware_test.rb", "-v")
	t.Logf("minitest:\n%s", tail(out, 3))
	m := minitestSummary.FindSubmatch(out)
	if m == nil || string(m[1]) == "0" || string(m[2]) != "0" || string(m[3]) != "0" || string(m[4]) != "0" {
		t.Errorf("minitest: want runs and no failure, error or skip:\n%s", out)
	}
	if missing := present(out, "key_rotation", "fails_closed", "HS256"); len(missing) > 0 {
		t.Errorf("minitest did not run %q:\n%s", missing, out)
	}
}
