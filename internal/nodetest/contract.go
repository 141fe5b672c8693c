package nodetest

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anteroom/anteroom/web/openapi/conform"
	"github.com/gofiber/fiber/v2"
)

// Tap is the node middleware (node.Config.Tap) that checks every exchange
// the node answers against its HTTP contract (package conform) and fails
// t on each one outside it: whoever sent it, a test's own HTTP client, a
// proxy in front of the node or a browser page. Start sets it on the
// nodes it starts; a test that starts a node itself sets
// cfg.Tap = nodetest.Tap(t). Exchanges after t's cleanup began are left
// unchecked (a draining node).
//
// Benchmarks are not tapped (the check would be measured with the node).
func Tap(t testing.TB) fiber.Handler {
	t.Helper()
	c, err := conform.Shared()
	if err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	t.Cleanup(func() { done.Store(true) })
	return c.Tap(func(err error) {
		if !done.Load() {
			t.Errorf("contract (web/openapi/openapi.yaml): %v", err)
		}
	})
}

// tapped are the base URLs of nodes whose Tap checks their exchanges:
// Call leaves those to the node.
var tapped sync.Map // base URL → true

// tap sets a tapped node's base URL; untap forgets it.
func tap(base string)   { tapped.Store(base, true) }
func untap(base string) { tapped.Delete(base) }

// checkedByNode reports whether url is served by a tapped node.
func checkedByNode(url string) bool {
	found := false
	tapped.Range(func(k, _ any) bool {
		found = strings.HasPrefix(url, k.(string)+"/")
		return !found
	})
	return found
}

// conformant fails t when the exchange is outside the contract, unless a
// tapped node checked it already.
func conformant(t testing.TB, req *http.Request, body []byte, a Answer) {
	t.Helper()
	if checkedByNode(req.URL.String()) {
		return
	}
	c, err := conform.Shared()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Check(req, body, a.Status, a.Header, a.Raw); err != nil {
		t.Errorf("contract (web/openapi/openapi.yaml): %v", err)
	}
}
