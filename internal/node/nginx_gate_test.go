package node_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/tokens"
)

// origin is a stub shop: it records the X-User-ID of every request.
type origin struct {
	mu    sync.Mutex
	users []string
	paths []string
}

func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.users = append(o.users, r.Header.Get("X-User-ID"))
	o.paths = append(o.paths, r.URL.RequestURI())
	_, _ = io.WriteString(w, "shop page")
}

func (o *origin) seen() (users, paths []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.users...), append([]string(nil), o.paths...)
}

// browserish is an HTTP client with a cookie jar that does not follow
// redirects, so the test sees each one.
func browserish(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func getVia(t *testing.T, c *http.Client, url string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// tokenSub reads the sub claim of a JWT without verifying it.
func tokenSub(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c struct{ Sub string }
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c.Sub
}

// TestNginxGate runs deploy/gateway/nginx.conf as written in a real nginx
// in front of a stub shop and a node (anonymous visitors, the default). An
// anonymous visitor of a protected URL is redirected to the waiting page
// with that URL as its return; once joined and admitted through nginx the
// same request reaches the shop with X-User-ID = the token's subject, never
// the client's own X-User-ID. A forged, expired or other event's token is
// redirected, a foreign return address is dropped, and the gate runs no
// Redis command.
func TestNginxGate(t *testing.T) {
	site, err := os.ReadFile("../../deploy/gateway/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	keyDir := t.TempDir()
	// Manual: the node's loops (the tick, the lists' refresh) run no
	// Redis command behind the gate's back; the test ticks while it
	// waits for an admission.
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), SigningKeys: keyDir, Issuer: "anteroom", Audience: "shop", Manual: true})
	shop := &origin{}
	srv := httptest.NewServer(shop)
	t.Cleanup(srv.Close)
	conf := strings.Replace(string(site), "127.0.0.1:8080", strings.TrimPrefix(n.URL(), "http://"), 1)
	conf = strings.Replace(conf, "127.0.0.1:3000", strings.TrimPrefix(srv.URL, "http://"), 1)
	gw := testenv.StartNginx(t, conf)
	nodetest.CreateSale(t, n, "drop", openSale(10, 1, 0, 0, 1000))
	nodetest.CreateSale(t, n, "other", openSale(10, 1, 0, 0, 1000))

	const item = "/drop/item?a=1&b=2"
	mallory := map[string]string{"X-User-ID": "mallory"}
	b := browserish(t)
	resp, _ := getVia(t, b, gw.URL()+item, mallory)
	wantPage := "/e/drop?return=%2Fdrop%2Fitem%3Fa%3D1%26b%3D2"
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != gw.URL()+wantPage {
		t.Fatalf("anonymous: %d to %q, want 302 to %q", resp.StatusCode, resp.Header.Get("Location"), gw.URL()+wantPage)
	}
	if resp, _ := getVia(t, b, gw.URL()+wantPage, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("waiting page through nginx: %d", resp.StatusCode)
	}

	// Join and wait through nginx, as the waiting page does.
	admit := func(c *http.Client, ev string) string {
		req, _ := http.NewRequest(http.MethodPost, gw.URL()+"/events/"+ev+"/join", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("join %s: %d %s", ev, resp.StatusCode, body)
		}
		var tok string
		nodetest.WaitFor(t, "admission to "+ev, 30*time.Second, func() bool {
			if err := n.Snapshots.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			resp, body := getVia(t, c, gw.URL()+"/events/"+ev+"/status", nil)
			var st struct {
				State string `json:"state"`
				Token string `json:"admission_token"`
			}
			_ = json.Unmarshal(body, &st)
			tok = st.Token
			return resp.StatusCode == http.StatusOK && tok != ""
		})
		return tok
	}
	tok := admit(b, "drop")
	user := tokenSub(t, tok)
	if resp, body := getVia(t, b, gw.URL()+item, mallory); resp.StatusCode != http.StatusOK || string(body) != "shop page" {
		t.Fatalf("admitted: %d %q, want the shop page", resp.StatusCode, body)
	}
	users, paths := shop.seen()
	if len(users) != 1 || users[0] != user || user == "" || paths[0] != item {
		t.Fatalf("the shop saw users %q paths %q, want one request for %s from %q", users, paths, item, user)
	}
	// A form post passes too: the gate's subrequest carries no body.
	post, err := b.Post(gw.URL()+"/drop/cart", "application/x-www-form-urlencoded", strings.NewReader("sku=42"))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusOK {
		t.Errorf("admitted POST: %d, want 200", post.StatusCode)
	}
	// An app presents the token as a bearer instead of the cookie.
	if resp, _ := getVia(t, http.DefaultClient, gw.URL()+"/drop/api", map[string]string{"Authorization": "Bearer " + tok}); resp.StatusCode != http.StatusOK {
		t.Errorf("bearer admission token: %d, want 200", resp.StatusCode)
	}

	// Tokens that must not pass: forged, expired, of another event.
	keys, err := tokens.OpenKeyDir(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	expired, _, err := tokens.NewIssuer(keys, tokens.IssuerConfig{Issuer: "anteroom", Audience: "shop"}).Issue("drop", user, 1, time.Minute, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	sig := tok[strings.LastIndexByte(tok, '.')+1:]
	forged := tok[:len(tok)-len(sig)] + strings.Repeat("A", len(sig))
	other := admit(browserish(t), "other")
	before := r.CommandCount(t)
	for name, bad := range map[string]string{"forged": forged, "expired": expired, "other event": other} {
		resp, _ := getVia(t, browserish(t), gw.URL()+item, map[string]string{"Cookie": "anteroom_a_drop=" + bad})
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != gw.URL()+wantPage {
			t.Errorf("%s token: %d to %q, want 302 to the waiting page", name, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if after := r.CommandCount(t); after != before {
		t.Errorf("the gate ran %d Redis commands, want 0", after-before)
	}
	if users, _ := shop.seen(); len(users) != 3 {
		t.Errorf("the shop saw %d requests, want 3 (the admitted ones)", len(users))
	}

	// A return address off this site is dropped, not redirected to.
	for _, foreign := range []string{"https://evil.example/", "//evil.example/x", "/\\evil.example"} {
		a := nodetest.Call(t, http.MethodGet, n.URL()+"/events/drop/gate", map[string]string{"X-Original-URI": foreign}, nil)
		if a.Status != http.StatusUnauthorized || a.Header.Get("X-Anteroom-Redirect") != "/e/drop" {
			t.Errorf("return %q: %d to %q, want 401 to /e/drop", foreign, a.Status, a.Header.Get("X-Anteroom-Redirect"))
		}
	}
}
