package connectors_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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

const (
	issuer   = "https://queue.shop.example"
	audience = "anteroom-claim"
	sale     = "drop"
)

// fixture is a real node with two sales and the environment a runtime's
// test suite reads: the node's URL, the sale, genuine tokens from real
// joins, tokens the suite cannot make itself (expired, another audience's:
// they need the node's private key), and CONTROL_URL, whose POST /rotate
// rotates the node's signing keys and answers a genuine token of the new
// key ({"token", "user", "kid"}).
type fixture struct {
	n   *node.Node
	env []string
}

func startFixture(t *testing.T) *fixture {
	t.Helper()
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	n := nodetest.Start(t, nodetest.HeaderMode(node.Config{RedisURL: r.URL(), NATSURL: ns.URL(),
		SigningKeys: keyDir, Issuer: issuer, KeyReload: 100 * time.Millisecond}))
	for _, ev := range []string{sale, "other"} {
		nodetest.CreateSale(t, n, ev, openSale())
	}
	keys, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(aud string, at time.Time) string {
		raw, _, err := tokens.NewIssuer(keys, tokens.IssuerConfig{Issuer: issuer, Audience: aud}).Issue(sale, "carol", 1, time.Minute, at)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}

	var mu sync.Mutex
	rotations := 0
	control := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/rotate" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		rotations++
		tok, user, kid, err := rotate(n, keys, fmt.Sprintf("rotated-%d", rotations))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"token": tok, "user": user, "kid": kid})
	}))
	t.Cleanup(control.Close)

	return &fixture{n: n, env: []string{
		"ANTEROOM_URL=" + n.URL(),
		"ANTEROOM_EVENT=" + sale,
		"ANTEROOM_ISSUER=" + issuer,
		"ANTEROOM_AUDIENCE=" + audience,
		"TOKEN_GENUINE=" + nodetest.AdmitUser(t, n, sale, "alice"),
		"TOKEN_USER=alice",
		"TOKEN_OTHER_EVENT=" + nodetest.AdmitUser(t, n, "other", "bob"),
		"TOKEN_EXPIRED=" + issue(audience, time.Now().Add(-time.Hour)),
		"TOKEN_OTHER_AUDIENCE=" + issue("another-audience", time.Now()),
		"CONTROL_URL=" + control.URL,
	}}
}

// openSale is a sale open now that admits every joiner at once.
func openSale() map[string]any {
	now := time.Now().UTC().Truncate(time.Second)
	return map[string]any{
		"name": "connector test", "supply": 100, "per_user_limit": 1,
		"prequeue_opens_at": now.Add(-time.Second), "starts_at": now, "ends_at": now.Add(time.Hour),
		"admit_rate_per_second": 1000, "admission_ttl_seconds": 600,
	}
}

// rotate makes a new key the node's signer at once and admits user
// through a real join until the token carries the new kid (publishing the
// kid and signing with it may come one reload apart); the user admitted
// is prefix-N. It reports errors instead of failing the test: it runs in
// the control server's handler.
func rotate(n *node.Node, keys *tokens.KeySet, prefix string) (tok, user, kid string, err error) {
	kid, err = keys.Rotate(time.Now())
	if err != nil {
		return "", "", "", err
	}
	deadline := time.Now().Add(15 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		user = fmt.Sprintf("%s-%d", prefix, i)
		tok, err = admit(n, sale, user)
		if err == nil && kidOf(tok) == kid {
			return tok, user, kid, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", "", "", fmt.Errorf("no token of the rotated key %s within 15 s (last: %v)", kid, err)
}

// admit joins ev as user (X-User-ID) and polls the status for the token.
func admit(n *node.Node, ev, user string) (string, error) {
	call := func(method, url string, hdr map[string]string) (map[string]any, error) {
		req, err := http.NewRequest(method, url, http.NoBody)
		if err != nil {
			return nil, err
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, raw)
		}
		var m map[string]any
		return m, json.Unmarshal(raw, &m)
	}
	base := n.URL() + "/events/" + ev
	j, err := call(http.MethodPost, base+"/join", map[string]string{"X-User-ID": user})
	if err != nil {
		return "", err
	}
	for range 50 {
		s, err := call(http.MethodGet, base+"/status", map[string]string{"Authorization": "Bearer " + nodetest.Str(j, "ticket")})
		if err != nil {
			return "", err
		}
		if tok := nodetest.Str(s, "admission_token"); tok != "" {
			return tok, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", errors.New("no admission within 5 s")
}

func kidOf(tok string) string {
	h, _, _ := strings.Cut(tok, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(h)
	var hdr struct{ Kid string }
	_ = json.Unmarshal(raw, &hdr)
	return hdr.Kid
}

// run runs bin with args in dir with env added; it returns the combined
// output and fails the test when the command fails.
func run(t *testing.T, dir string, env []string, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s: %v", bin, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return out
}

// tail returns the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// present reports whether every name is among the lines of out.
func present(out []byte, names ...string) []string {
	var missing []string
	for _, name := range names {
		if !slices.ContainsFunc(strings.Split(string(out), "\n"), func(l string) bool { return strings.Contains(l, name) }) {
			missing = append(missing, name)
		}
	}
	return missing
}
