package node_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// TestCloudflareWorkerFailOpen runs the Worker in miniflare with
// FAIL_OPEN_UNTIL a few seconds ahead. While the JWKS answers, nothing
// changes (anonymous visitors go to the waiting room). Once it cannot be
// fetched, anonymous visitors and token holders the Worker cannot check
// reach the shop with X-Anteroom-Fail-Open and no X-User-ID (the
// client's own removed); at the deadline, with no one acting, the Worker
// fails closed again (the waiting room, 503 for a token). A deadline in
// the past does nothing, and a FAIL_OPEN_UNTIL that is not a time is a
// wrong setting (503 for everyone, logged).
func TestCloudflareWorkerFailOpen(t *testing.T) {
	nodeBin := cfWorkerDeps(t)
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	const issuer, audience = "https://queue.shop.example", "anteroom-claim"
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: t.TempDir(), Issuer: issuer})
	nodetest.CreateSale(t, n, "drop", openSale(10, 1, 0, 0, 1000))
	token := nodetest.AdmitUser(t, n, "drop", "ada")
	shop := &cfShop{}
	shopSrv := httptest.NewServer(shop)
	t.Cleanup(shopSrv.Close)
	jwks := newJWKSFront(t, n.URL())
	vars := func(until string) map[string]string {
		return map[string]string{
			"ANTEROOM_URL": n.URL(), "JWKS_URL": jwks.proxy.URL, "EVENT": "drop",
			"ISSUER": issuer, "AUDIENCE": audience, "JWKS_REFETCH_SECONDS": "1", "FAIL_OPEN_UNTIL": until,
		}
	}
	const item = "drop/item?a=1"
	mallory := map[string]string{"X-User-ID": "mallory"}
	withToken := map[string]string{"X-User-ID": "mallory", "Authorization": "Bearer " + token}

	until := time.Now().Add(12 * time.Second).UTC().Truncate(time.Second)
	stamp := until.Format(time.RFC3339)
	w := startCFWorker(t, nodeBin, vars(stamp), shopSrv.URL)
	if resp, _ := getVia(t, browserish(t), w.url+item, mallory); resp.StatusCode != http.StatusFound {
		t.Fatalf("anonymous with the JWKS up: %d, want 302 to the waiting room", resp.StatusCode)
	}
	if resp, _ := getVia(t, browserish(t), w.url+item, withToken); resp.StatusCode != http.StatusOK || resp.Header.Get("X-Anteroom-Fail-Open") != "" {
		t.Fatalf("admitted with the JWKS up: %d %q, want the shop, not failing open", resp.StatusCode, resp.Header.Get("X-Anteroom-Fail-Open"))
	}

	jwks.down.Store(true)
	nodetest.WaitFor(t, "an anonymous visitor to reach the shop once the JWKS is down", 3*time.Second, func() bool {
		resp, body := getVia(t, browserish(t), w.url+item, mallory)
		return resp.StatusCode == http.StatusOK && string(body) == "shop page" && resp.Header.Get("X-Anteroom-Fail-Open") == stamp
	})
	if users, _, _ := shop.seen(); users[len(users)-1] != "" {
		t.Fatalf("failing open, the shop saw X-User-ID %q, want none", users[len(users)-1])
	}

	// A Worker whose JWKS was never reachable: a token it cannot check.
	w2 := startCFWorker(t, nodeBin, map[string]string{
		"ANTEROOM_URL": n.URL(), "JWKS_URL": "http://" + closedPort(t) + "/.well-known/jwks.json", "EVENT": "drop",
		"ISSUER": issuer, "AUDIENCE": audience, "JWKS_REFETCH_SECONDS": "1", "FAIL_OPEN_UNTIL": stamp,
	}, shopSrv.URL)
	resp, body := getVia(t, browserish(t), w2.url+item, withToken)
	if resp.StatusCode != http.StatusOK || string(body) != "shop page" || resp.Header.Get("X-Anteroom-Fail-Open") != stamp {
		t.Fatalf("a token it cannot check, failing open: %d %q %q, want the shop", resp.StatusCode, body, resp.Header.Get("X-Anteroom-Fail-Open"))
	}
	if users, _, _ := shop.seen(); users[len(users)-1] != "" {
		t.Fatalf("failing open with a token it cannot check, the shop saw X-User-ID %q, want none", users[len(users)-1])
	}

	var closedAt time.Time
	nodetest.WaitFor(t, "the Worker to fail closed at the deadline", time.Until(until)+2*time.Second, func() bool {
		resp, _ := getVia(t, browserish(t), w.url+item, mallory)
		if resp.StatusCode == http.StatusFound {
			closedAt = time.Now()
			return true
		}
		return false
	})
	if closedAt.Before(until) {
		t.Errorf("failed closed at %s, before the deadline %s", closedAt.Format(time.RFC3339Nano), stamp)
	}
	if resp, _ := getVia(t, browserish(t), w2.url+item, withToken); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a token it cannot check after the deadline: %d, want 503", resp.StatusCode)
	}
	t.Logf("deadline %s: closed again at %s (%s after)", stamp, closedAt.Format(time.RFC3339Nano), closedAt.Sub(until).Round(time.Millisecond))

	// A deadline in the past does nothing; a wrong one is a wrong setting.
	past := startCFWorker(t, nodeBin, vars(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)), shopSrv.URL)
	if resp, _ := getVia(t, browserish(t), past.url+item, mallory); resp.StatusCode != http.StatusFound {
		t.Errorf("a past deadline with the JWKS down: %d, want 302 to the waiting room", resp.StatusCode)
	}
	far := startCFWorker(t, nodeBin, vars(time.Now().Add(48*time.Hour).UTC().Format(time.RFC3339)), shopSrv.URL)
	if resp, _ := getVia(t, browserish(t), far.url+item, mallory); resp.StatusCode != http.StatusFound {
		t.Errorf("a deadline 48 h ahead with the JWKS down: %d, want 302 (ignored: more than 24 h)", resp.StatusCode)
	}
	far.waitLog(t, "says the deadline is too far", "FAIL_OPEN_UNTIL is more than 24 h ahead")
	bad := startCFWorker(t, nodeBin, vars("tomorrow"), shopSrv.URL)
	if resp, _ := getVia(t, browserish(t), bad.url+item, mallory); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("FAIL_OPEN_UNTIL=tomorrow: %d, want 503 (a wrong setting)", resp.StatusCode)
	}
	bad.waitLog(t, "names the wrong setting", `FAIL_OPEN_UNTIL "tomorrow" is not an RFC 3339 time`)
}
