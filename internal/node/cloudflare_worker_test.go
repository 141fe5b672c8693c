package node_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
)

// TestCloudflareWorkerTypes type-checks the Worker package
// (deploy/gateway/cloudflare-worker: JavaScript with JSDoc types, checked
// by tsc against @cloudflare/workers-types), and holds its wrangler.toml
// to the settings the Worker reads (the Env typedef): every [vars] name is
// one of them, and each of them is in [vars] and read by the code.
func TestCloudflareWorkerTypes(t *testing.T) {
	nodeBin := cfWorkerDeps(t)
	cmd := exec.Command(nodeBin, "node_modules/typescript/bin/tsc", "--noEmit", "-p", ".")
	cmd.Dir = cfWorkerDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("tsc --noEmit: %v\n%s", err, out)
	}

	files, err := filepath.Glob(filepath.Join(cfWorkerDir, "src", "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the Worker's sources: %v %v", files, err)
	}
	var src []byte
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, raw...)
	}
	_, typedef, _ := strings.Cut(string(src), "@typedef {object} Env")
	typedef, _, _ = strings.Cut(typedef, "*/")
	var read []string
	for _, m := range regexp.MustCompile(`@property \{[^}]*\} \[?([A-Z_]+)`).FindAllStringSubmatch(typedef, -1) {
		read = append(read, m[1])
	}
	conf, err := os.ReadFile(filepath.Join(cfWorkerDir, "wrangler.toml"))
	if err != nil {
		t.Fatal(err)
	}
	_, vars, _ := strings.Cut(string(conf), "\n[vars]\n")
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+) = "`).FindAllStringSubmatch(vars, -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(read)
	slices.Sort(listed)
	if len(read) < 4 || !slices.Equal(read, listed) {
		t.Errorf("the Worker reads %q, wrangler.toml's [vars] set %q", read, listed)
	}
	for _, v := range read {
		if !strings.Contains(string(src), "env."+v) && !strings.Contains(string(src), `"`+v+`"`) {
			t.Errorf("the Env typedef lists %s, which the Worker never reads", v)
		}
	}
}

// TestCloudflareWorker runs the Worker package in miniflare (workerd, the
// Workers runtime) in front of a stub shop and a real node (anonymous
// visitors), as deployed: the waiting room's paths pass through it to the
// node. An anonymous visitor of a protected URL is redirected to the
// waiting page with that URL as its return, exactly where the node's own
// gate sends nginx; once joined and admitted through the Worker, the same
// request reaches the shop with X-User-ID = the token's subject, never the
// client's own X-User-ID. Forged, expired, other-event, other-audience,
// other-issuer, wrong-algorithm and unknown-key tokens are redirected. The
// JWKS is fetched once and cached (admitted requests fetch nothing, even
// with the JWKS down); an unknown kid fetches it again, at most once a
// second here (JWKS_REFETCH_SECONDS), so a key rotation on the node is
// picked up. With no JWKS it can trust (a closed port; or a JWKS down for
// longer than JWKS_MAX_STALE_SECONDS) it fails closed: 503 for admitted
// visitors, nothing reaches the shop, and the log says why; so it does,
// for everyone, when a setting is wrong. ORIGIN, when set, is the shop.
func TestCloudflareWorker(t *testing.T) {
	start := time.Now()
	nodeBin := cfWorkerDeps(t)
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	const issuer, audience = "https://queue.shop.example", "anteroom-claim"
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir, Issuer: issuer, KeyReload: 100 * time.Millisecond})
	nodetest.CreateSale(t, n, "drop", openSale(10, 1, 0, 0, 1000))
	nodetest.CreateSale(t, n, "other", openSale(10, 1, 0, 0, 1000))
	shop := &cfShop{}
	shopSrv := httptest.NewServer(shop)
	t.Cleanup(shopSrv.Close)
	jwks := newJWKSFront(t, n.URL())
	vars := map[string]string{
		"ANTEROOM_URL": n.URL(), "JWKS_URL": jwks.proxy.URL, "EVENT": "drop",
		"ISSUER": issuer, "AUDIENCE": audience, "JWKS_REFETCH_SECONDS": "1",
	}
	w := startCFWorker(t, nodeBin, vars, shopSrv.URL)
	t.Logf("miniflare up %v after the test started", time.Since(start).Round(time.Millisecond))

	const item = "drop/item?a=1&b=2"
	mallory := map[string]string{"X-User-ID": "mallory"}
	resp, _ := getVia(t, browserish(t), w.url+item, mallory)
	gate := nodetest.Call(t, http.MethodGet, n.URL()+"/events/drop/gate", map[string]string{"X-Original-URI": "/" + item}, nil)
	wantPage := "/e/drop?return=%2Fdrop%2Fitem%3Fa%3D1%26b%3D2"
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != wantPage || gate.Header.Get("X-Anteroom-Redirect") != wantPage {
		t.Fatalf("anonymous: %d to %q (the node's gate: %q), want 302 to %q", resp.StatusCode, resp.Header.Get("Location"), gate.Header.Get("X-Anteroom-Redirect"), wantPage)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("redirect Cache-Control %q, want no-store", cc)
	}

	// Join and wait through the Worker, as the waiting page does: the
	// admission cookie is then the Worker's host's.
	admit := func(c *http.Client, ev string) string {
		t.Helper()
		if resp, _ := getVia(t, c, w.url+"e/"+ev+"?return=%2Fdrop%2F", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("waiting page through the Worker: %d", resp.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodPost, w.url+"events/"+ev+"/join", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("join %s through the Worker: %d %s", ev, resp.StatusCode, body)
		}
		var tok string
		nodetest.WaitFor(t, "admission to "+ev, 30*time.Second, func() bool {
			resp, body := getVia(t, c, w.url+"events/"+ev+"/status", nil)
			var st struct {
				Token string `json:"admission_token"`
			}
			_ = json.Unmarshal(body, &st)
			tok = st.Token
			return resp.StatusCode == http.StatusOK && tok != ""
		})
		return tok
	}
	b := browserish(t)
	tok := admit(b, "drop")
	user := tokenSub(t, tok)
	if resp, body := getVia(t, b, w.url+item, mallory); resp.StatusCode != http.StatusOK || string(body) != "shop page" {
		t.Fatalf("admitted: %d %q, want the shop page\n%s", resp.StatusCode, body, w.log)
	}
	users, paths, _ := shop.seen()
	if len(users) != 1 || users[0] != user || user == "" || paths[0] != "/"+item {
		t.Fatalf("the shop saw users %q paths %q, want one request for /%s from %q", users, paths, item, user)
	}
	post, err := b.Post(w.url+"drop/cart", "application/x-www-form-urlencoded", strings.NewReader("sku=42"))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if _, _, posts := shop.seen(); post.StatusCode != http.StatusOK || !slices.Equal(posts, []string{"sku=42"}) {
		t.Errorf("admitted POST: %d, the shop got bodies %q, want 200 and sku=42", post.StatusCode, posts)
	}
	if resp, _ := getVia(t, http.DefaultClient, w.url+"drop/api", map[string]string{"Authorization": "Bearer " + tok, "X-User-ID": "mallory"}); resp.StatusCode != http.StatusOK {
		t.Errorf("bearer admission token: %d, want 200", resp.StatusCode)
	}
	if users, _, _ := shop.seen(); len(users) != 3 || slices.ContainsFunc(users, func(u string) bool { return u != user }) {
		t.Fatalf("the shop saw X-User-ID %q, want %q three times", users, user)
	}

	// Tokens that must not pass.
	keys, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ks *tokens.KeySet, iss, aud string, now time.Time) string {
		raw, _, err := tokens.NewIssuer(ks, tokens.IssuerConfig{Issuer: iss, Audience: aud}).Issue("drop", user, 1, time.Minute, now)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	strangers, err := tokens.OpenKeyDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	seg := func(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }
	hs := seg(`{"alg":"HS256","kid":"`+kidOf(t, tok)+`","typ":"JWT"}`) + "." + parts[1]
	mac := hmac.New(sha256.New, keys.JWKS()) // the public keys as an HMAC secret: alg confusion
	mac.Write([]byte(hs))
	bad := map[string]string{
		"forged":         parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])),
		"expired":        issue(keys, issuer, audience, time.Now().Add(-time.Hour)),
		"not yet valid":  issue(keys, issuer, audience, time.Now().Add(time.Hour)),
		"other event":    admit(browserish(t), "other"),
		"other audience": issue(keys, issuer, "someone-else", time.Now()),
		"other issuer":   issue(keys, "https://evil.example", audience, time.Now()),
		"unknown key":    issue(strangers, issuer, audience, time.Now()),
		"alg none":       seg(`{"alg":"none","typ":"JWT"}`) + "." + parts[1] + ".",
		"alg HS256":      hs + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)),
		"no kid":         seg(`{"alg":"EdDSA","typ":"JWT"}`) + "." + parts[1] + "." + parts[2],
		"padded":         tok + "=",
		"garbage":        "not.a-token",
	}
	for name, raw := range bad {
		resp, _ := getVia(t, browserish(t), w.url+item, map[string]string{"Cookie": "lang=en; anteroom_a_drop=" + raw, "X-User-ID": "mallory"})
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != wantPage {
			t.Errorf("%s token: %d to %q, want 302 to the waiting page", name, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if users, _, _ := shop.seen(); len(users) != 3 {
		t.Fatalf("the shop saw %d requests, want 3 (the admitted ones)", len(users))
	}

	// Cached: admitted requests fetch no JWKS, even while it is down, also
	// when they are further apart than JWKS_REFETCH_SECONDS (the clock
	// has to pass for that: the sleeps are the subject, not a wait).
	before := jwks.hits.Load()
	jwks.down.Store(true)
	for i := range 3 {
		if i > 0 {
			time.Sleep(1100 * time.Millisecond)
		}
		if resp, _ := getVia(t, b, w.url+item, nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("admitted, JWKS cached and down: %d, want 200", resp.StatusCode)
		}
	}
	if got := jwks.hits.Load() - before; got != 0 {
		t.Errorf("three admitted requests over 2 s fetched the JWKS %d times, want 0 (cached for 300 s)", got)
	}
	jwks.down.Store(false)

	// An unknown kid fetches the JWKS again, at most once a second.
	before = jwks.hits.Load()
	t0 := time.Now()
	for range 20 {
		if resp, _ := getVia(t, browserish(t), w.url+item, map[string]string{"Cookie": "anteroom_a_drop=" + bad["unknown key"]}); resp.StatusCode != http.StatusFound {
			t.Fatalf("unknown key: %d, want 302", resp.StatusCode)
		}
	}
	if got, most := jwks.hits.Load()-before, 1+int64(time.Since(t0)/time.Second); got > most {
		t.Errorf("20 tokens of an unknown kid in %v fetched the JWKS %d times, want at most %d (one a second)", time.Since(t0), got, most)
	}

	// Key rotation: the node signs with a new key; the Worker, whose cache
	// is still fresh (300 s), fetches the JWKS for the new kid.
	newKid, err := keys.Rotate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "the node to reload the rotated keys", 10*time.Second, func() bool {
		return slices.Contains(jwksOf(t, n), newKid)
	})
	// Publishing the kid and signing with it are one reload, but the
	// JWKS answer may come from the reload before the signer's on a
	// loaded machine (a CI-like run: 'signed by' the old kid once): a
	// new visitor's token is asked for until it carries the new kid.
	var b2 *http.Client
	var tok2 string
	testenv.Eventually(t, "a token signed by the rotated key", 10*time.Second, func() error {
		b2 = browserish(t)
		tok2 = admit(b2, "drop")
		if kid := kidOf(t, tok2); kid != newKid {
			return fmt.Errorf("token after rotation signed by %s, want %s", kid, newKid)
		}
		return nil
	})
	testenv.Eventually(t, "the Worker to accept a token of the rotated key", 30*time.Second, func() error {
		if resp, body := getVia(t, b2, w.url+item, nil); resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%d %q", resp.StatusCode, body)
		}
		return nil
	})
	if resp, _ := getVia(t, b, w.url+item, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("token of the old (verify-only) key after rotation: %d, want 200", resp.StatusCode)
	}

	// A new kid while the JWKS is down: the Worker cannot check it, so it
	// neither lets it in nor sends it to the room (which would send it back).
	jwks.down.Store(true)
	newer, err := keys.Rotate(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	nodetest.WaitFor(t, "the node to reload the rotated keys", 10*time.Second, func() bool {
		return slices.Contains(jwksOf(t, n), newer)
	})
	tok3 := issue(keys, issuer, audience, time.Now())
	if kidOf(t, tok3) != newer {
		t.Fatalf("issued with %s, want %s", kidOf(t, tok3), newer)
	}
	testenv.Eventually(t, "a token of a kid the Worker cannot fetch to be refused with 503", 30*time.Second, func() error {
		if resp, _ := getVia(t, browserish(t), w.url+item, map[string]string{"Cookie": "anteroom_a_drop=" + tok3}); resp.StatusCode != http.StatusServiceUnavailable {
			return fmt.Errorf("%d", resp.StatusCode)
		}
		return nil
	})
	w.waitLog(t, "says the JWKS fetch failed", "cannot fetch the JWKS "+jwks.proxy.URL, "HTTP 503")
	jwks.down.Store(false)
	t.Logf("main Worker checks done %v after the test started", time.Since(start).Round(time.Millisecond))

	served, _, _ := shop.seen()
	t.Run("JWKS unreachable from the start", func(t *testing.T) {
		// ANTEROOM_URL is a recorder here: what the Worker passes on.
		var mu sync.Mutex
		var seen []http.Header
		room := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Header.Clone())
			mu.Unlock()
			_, _ = io.WriteString(w, "waiting page")
		}))
		t.Cleanup(room.Close)
		closed := closedPort(t)
		v := map[string]string{"ANTEROOM_URL": room.URL, "JWKS_URL": "http://" + closed + "/.well-known/jwks.json",
			"EVENT": "drop", "ISSUER": issuer, "AUDIENCE": audience, "JWKS_REFETCH_SECONDS": "1"}
		w := startCFWorker(t, nodeBin, v, shopSrv.URL)
		for _, auth := range []map[string]string{{"Cookie": "anteroom_a_drop=" + tok2}, {"Authorization": "Bearer " + tok2}} {
			if resp, body := getVia(t, browserish(t), w.url+item, auth); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Cache-Control") != "no-store" {
				t.Errorf("valid token, JWKS unreachable: %d %q, want 503 no-store (fail closed)", resp.StatusCode, body)
			}
		}
		if resp, _ := getVia(t, browserish(t), w.url+item, nil); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != wantPage {
			t.Errorf("anonymous, JWKS unreachable: %d to %q, want 302 to the waiting page", resp.StatusCode, resp.Header.Get("Location"))
		}
		if users, _, _ := shop.seen(); len(users) != len(served) {
			t.Errorf("the shop saw %d requests, want still %d", len(users), len(served))
		}
		w.waitLog(t, "says why it failed closed", "cannot fetch the JWKS http://"+closed, "fail closed")
		// The waiting room's paths pass through, without the client's
		// X-User-ID or X-Forwarded-For: X-Forwarded-For is the visitor's
		// address (CF-Connecting-IP), X-Forwarded-Host the host asked for
		// (miniflare's upstream, the shop, stands for it).
		resp, body := getVia(t, browserish(t), w.url+"e/drop?return=%2Fdrop%2F", map[string]string{"X-User-ID": "mallory", "X-Forwarded-For": "203.0.113.66"})
		mu.Lock()
		defer mu.Unlock()
		if resp.StatusCode != http.StatusOK || string(body) != "waiting page" || len(seen) != 1 {
			t.Fatalf("waiting page through the Worker: %d %q, room saw %d requests", resp.StatusCode, body, len(seen))
		}
		h := seen[0]
		if h.Get("X-User-ID") != "" || h.Get("X-Forwarded-For") != "127.0.0.1" || h.Get("X-Forwarded-Proto") != "http" || h.Get("X-Forwarded-Host") != strings.TrimPrefix(shopSrv.URL, "http://") {
			t.Errorf("anteroom got X-User-ID %q, X-Forwarded-For %q, -Proto %q, -Host %q", h.Get("X-User-ID"), h.Get("X-Forwarded-For"), h.Get("X-Forwarded-Proto"), h.Get("X-Forwarded-Host"))
		}
	})

	t.Run("JWKS down longer than the stale limit", func(t *testing.T) {
		front := newJWKSFront(t, n.URL())
		v := map[string]string{"ANTEROOM_URL": n.URL(), "JWKS_URL": front.proxy.URL, "EVENT": "drop", "ISSUER": issuer,
			"AUDIENCE": audience, "JWKS_CACHE_SECONDS": "1", "JWKS_REFETCH_SECONDS": "1", "JWKS_MAX_STALE_SECONDS": "3"}
		w := startCFWorker(t, nodeBin, v, shopSrv.URL)
		get := func() int {
			resp, _ := getVia(t, browserish(t), w.url+item, map[string]string{"Cookie": "anteroom_a_drop=" + tok2})
			return resp.StatusCode
		}
		if code := get(); code != http.StatusOK {
			t.Fatalf("valid token: %d, want 200\n%s", code, w.log)
		}
		front.down.Store(true)
		testenv.Eventually(t, "fail closed once the keys are 3 s stale", 30*time.Second, func() error {
			if code := get(); code != http.StatusServiceUnavailable {
				return fmt.Errorf("%d", code)
			}
			return nil
		})
		w.waitLog(t, "tells the stale keys, then failing closed", "still using the keys fetched", "dropped its keys: admitted visitors get 503 (fail closed)")
		front.down.Store(false)
		testenv.Eventually(t, "admitted again once the JWKS is back", 30*time.Second, func() error {
			if code := get(); code != http.StatusOK {
				return fmt.Errorf("%d", code)
			}
			return nil
		})
	})
	t.Run("ORIGIN, and a setting that is wrong", func(t *testing.T) {
		// No upstream: the requests are for the Worker's own host, and
		// ORIGIN names the shop.
		v := map[string]string{"ANTEROOM_URL": n.URL(), "JWKS_URL": jwks.proxy.URL, "EVENT": "drop", "ISSUER": issuer,
			"AUDIENCE": audience, "ORIGIN": shopSrv.URL + "/"}
		w := startCFWorker(t, nodeBin, v, "")
		before, _, _ := shop.seen()
		if resp, body := getVia(t, browserish(t), w.url+item, map[string]string{"Cookie": "anteroom_a_drop=" + tok2, "X-User-ID": "mallory"}); resp.StatusCode != http.StatusOK || string(body) != "shop page" {
			t.Fatalf("admitted, ORIGIN set: %d %q, want the shop page\n%s", resp.StatusCode, body, w.log)
		}
		if users, paths, _ := shop.seen(); len(users) != len(before)+1 || users[len(users)-1] != tokenSub(t, tok2) || paths[len(paths)-1] != "/"+item {
			t.Errorf("the shop's last request: %q for %q, want %q for /%s", users[len(users)-1], paths[len(paths)-1], tokenSub(t, tok2), item)
		}

		v["EVENT"] = "Drop!"
		w = startCFWorker(t, nodeBin, v, "")
		for _, hdr := range []map[string]string{nil, {"Cookie": "anteroom_a_drop=" + tok2}} {
			if resp, _ := getVia(t, browserish(t), w.url+item, hdr); resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("EVENT not an event id: %d, want 503 (fail closed)", resp.StatusCode)
			}
		}
		w.waitLog(t, "names the wrong setting", `misconfigured (EVENT "Drop!" is not an event id)`)
	})
	t.Logf("done %v after the test started", time.Since(start).Round(time.Millisecond))
}
