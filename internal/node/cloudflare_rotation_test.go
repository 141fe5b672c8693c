package node_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
)

// TestCloudflareWorkerRotation runs a staged key rotation (publish the
// next key, promote it once the JWKS cache age has passed, retire the old
// key after its last token expired) under the Worker in miniflare, which
// fetched the JWKS just before the rotation began. A token is signed and
// presented every 100 ms throughout, by a signer sharing the node's key
// directory: none is refused, although the Worker refetches the JWKS for
// an unknown kid at most every JWKS_REFETCH_SECONDS (a rotation at once,
// promote with no wait, is refused for up to that long). Here the
// Worker's cache and refetch interval, 3 s, stand for the JWKS max-age the
// nodes advertise (300 s), so the test takes seconds, not minutes. A
// token of the retired key presented after its expiry is refused.
func TestCloudflareWorkerRotation(t *testing.T) {
	nodeBin := cfWorkerDeps(t)
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	const issuer, audience = "https://queue.shop.example", "anteroom-claim"
	const reload = 100 * time.Millisecond
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir, Issuer: issuer, KeyReload: reload})
	shopSrv := httptest.NewServer(&cfShop{})
	t.Cleanup(shopSrv.Close)
	const cache = 3 * time.Second
	w := startCFWorker(t, nodeBin, map[string]string{
		"ANTEROOM_URL": n.URL(), "EVENT": "drop", "ISSUER": issuer, "AUDIENCE": audience,
		"JWKS_CACHE_SECONDS": "3", "JWKS_REFETCH_SECONDS": "3",
	}, shopSrv.URL)

	signer, err := tokens.OpenKeyDir(keyDir) // another node of the deployment
	if err != nil {
		t.Fatal(err)
	}
	iss := tokens.NewIssuer(signer, tokens.IssuerConfig{Issuer: issuer, Audience: audience})
	issue := func(ttl time.Duration) (string, tokens.Admission) {
		t.Helper()
		raw, adm, err := iss.Issue("drop", "u1", 1, ttl, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return raw, adm
	}
	status := func(raw string) int {
		t.Helper()
		resp, _ := getVia(t, browserish(t), w.url+"drop/item", map[string]string{"Authorization": "Bearer " + raw})
		return resp.StatusCode
	}
	old := signer.Active()
	if raw, _ := issue(time.Minute); status(raw) != http.StatusOK {
		t.Fatalf("a token before the rotation: refused\n%s", w.log)
	}

	// Just after that fetch: the rotation. Promote waits the cache age,
	// the nodes' reload and a margin for a fetch under way.
	wait := cache + reload + time.Second
	rotated := time.Now()
	next, err := signer.PublishNext(rotated)
	if err != nil {
		t.Fatal(err)
	}
	var promoted time.Time
	var lastOld string // a short-lived token of the old key
	var lastOldExp time.Time
	signedNew := 0
	for i := 0; signedNew < 20; i++ {
		if i == 600 {
			t.Fatalf("after %d tokens: promoted at %v, %d signed by the new key", i, promoted, signedNew)
		}
		if err := signer.Reload(); err != nil {
			t.Fatal(err)
		}
		if promoted.IsZero() {
			_, _, err := signer.Promote(time.Now(), wait)
			switch {
			case err == nil:
				promoted = time.Now()
			case !errors.Is(err, tokens.ErrTooSoon):
				t.Fatal(err)
			}
		}
		raw, _ := issue(time.Minute)
		kid := kidOf(t, raw)
		if got := status(raw); got != http.StatusOK {
			t.Fatalf("token %d, kid %s, signed %v after the rotation began: %d, want 200\n%s", i, kid, time.Since(rotated).Round(time.Millisecond), got, w.log)
		}
		switch kid {
		case next:
			signedNew++
		case old:
			var a tokens.Admission
			lastOld, a = issue(time.Second)
			lastOldExp = a.ExpiresAt
		}
		time.Sleep(100 * time.Millisecond) // the rotation runs on the clock: the pause is the subject
	}
	if promoted.Sub(rotated) < wait {
		t.Fatalf("promoted %v after publication, want at least %v", promoted.Sub(rotated), wait)
	}

	// Retire the old key once its last token has expired (+ leeway); that
	// token is refused from then on, the new key's still pass.
	testenv.WaitFor(t, "the old key's last token to expire", 30*time.Second, func() bool {
		return time.Now().After(lastOldExp.Add(tokens.DefaultLeeway + time.Second))
	})
	removed, err := signer.Retire(time.Now(), time.Since(promoted)-time.Millisecond)
	if err != nil || len(removed) != 1 || removed[0] != old {
		t.Fatalf("Retire: %v, %v; want %s", removed, err, old)
	}
	testenv.WaitFor(t, "the node to drop the retired key", 10*time.Second, func() bool {
		kids := jwksOf(t, n)
		return len(kids) == 1 && kids[0] == next
	})
	if got := status(lastOld); got != http.StatusFound {
		t.Errorf("the retired key's token after its expiry: %d, want 302 to the room", got)
	}
	if raw, _ := issue(time.Minute); status(raw) != http.StatusOK {
		t.Errorf("a token of the new key after retirement: refused")
	}
}
