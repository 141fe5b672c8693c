package node_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/internal/testenv"
)

// safetyNet returns a safety-net room switched on a second ago that lets
// maxActive people in at once, admissions lasting ttl seconds, with the
// per-IP join budget off (every test visitor comes from loopback).
func safetyNet(maxActive, ttl int, rate float64) map[string]any {
	return map[string]any{
		"name": "the whole site", "mode": "safety_net",
		"starts_at":  time.Now().UTC().Add(-time.Second).Truncate(time.Second),
		"max_active": maxActive, "admission_ttl_seconds": ttl, "admit_rate_per_second": rate,
		"limits": map[string]any{"join": map[string]any{"ip": map[string]any{"per_second": -1}}},
	}
}

// jarCookie returns the value of the cookie name the client holds for u.
func jarCookie(t *testing.T, c *http.Client, u, name string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range c.Jar.Cookies(pu) {
		if k.Name == name {
			return k.Value
		}
	}
	return ""
}

// lifecycleTypes lists the types of a sale's recent lifecycle events.
func lifecycleTypes(t *testing.T, n *node.Node, ev string) []string {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+ev+"/lifecycle", map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	var out struct {
		Events []struct {
			Type string `json:"type"`
		} `json:"events"`
	}
	if err := json.Unmarshal(a.Raw, &out); err != nil {
		t.Fatalf("lifecycle: %d %s", a.Status, a.Raw)
	}
	var types []string
	for _, e := range out.Events {
		types = append(types, e.Type)
	}
	return types
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestSafetyNetNginx runs docs/integrate.md's safety-net nginx configuration (the
// same as deploy/gateway/nginx-safety-net.conf) as written in a real nginx
// in front of a stub site and a node (anonymous visitors), with the
// docs' room (switched on now, with small thresholds for the test).
// Under max_active (2) each new visitor's very first request reaches the
// site, with X-User-ID = the admission's subject and the admission cookie
// set; the third is sent to the waiting page, joins the queue through
// nginx, and is admitted once the first two admissions expire (nobody
// renews them), then reaches the site. The room's queueing_started and
// queueing_stopped events show in the console's list.
func TestSafetyNetNginx(t *testing.T) {
	site := readmeBlock(t, "safety-net-nginx") + "\n"
	if file, err := os.ReadFile("../../deploy/gateway/nginx-safety-net.conf"); err != nil || string(file) != site {
		t.Fatalf("deploy/gateway/nginx-safety-net.conf differs from docs/integrate.md's block (%v)", err)
	}
	room := map[string]any{}
	if err := json.Unmarshal([]byte(readmeBlock(t, "safety-net-room")), &room); err != nil || room["mode"] != "safety_net" {
		t.Fatalf("docs/integrate.md's safety-net room: %v %v", room, err)
	}
	for k, v := range safetyNet(3, 10, 100) {
		if k != "name" && k != "mode" {
			room[k] = v
		}
	}
	room["no_show_grace_seconds"] = 2
	r := testenv.StartRedis(t)
	ns := testenv.StartNATS(t)
	n := nodetest.Start(t, node.Config{RedisURL: r.URL(), NATSURL: ns.URL(), TrustedProxies: []string{"127.0.0.1"}})
	shop := &origin{}
	srv := httptest.NewServer(shop)
	t.Cleanup(srv.Close)
	conf := strings.Replace(site, "127.0.0.1:8080", strings.TrimPrefix(n.URL(), "http://"), 1)
	conf = strings.Replace(conf, "127.0.0.1:3000", strings.TrimPrefix(srv.URL, "http://"), 1)
	gw := testenv.StartNginx(t, conf)
	nodetest.CreateSale(t, n, "site", room)
	afterTick(t, n, "site") // a save shows the sale; its first tick steps it

	const page = "/products/42?color=red"
	mallory := map[string]string{"X-User-ID": "mallory"}
	visitors := []*http.Client{browserish(t), browserish(t)}
	for i, v := range visitors {
		resp, body := getVia(t, v, gw.URL()+page, mallory)
		if resp.StatusCode != http.StatusOK || string(body) != "shop page" {
			t.Fatalf("visitor %d under the threshold: %d %q, want the site at once", i, resp.StatusCode, body)
		}
		tok := jarCookie(t, v, gw.URL(), "anteroom_a_site")
		if tok == "" {
			t.Fatalf("visitor %d: no admission cookie after the first request", i)
		}
		users, paths := shop.seen()
		if last := len(users) - 1; len(users) != 2*i+1 || users[last] != tokenSub(t, tok) || users[last] == "mallory" || paths[last] != page {
			t.Fatalf("the site saw users %q paths %q, want %s from the admission's subject", users, paths, page)
		}
		// The next request passes on the cookie.
		if resp, _ := getVia(t, v, gw.URL()+"/cart", nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("visitor %d, second request: %d", i, resp.StatusCode)
		}
	}

	// A third visitor comes through the waiting page's join: admitted at
	// once too, with a ticket.
	post := func(c *http.Client, path string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodPost, gw.URL()+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, raw
	}
	paged := browserish(t)
	if code, raw := post(paged, "/events/site/join"); code != http.StatusOK || !strings.Contains(string(raw), `"state":"admitted"`) || jarCookie(t, paged, gw.URL(), "anteroom_a_site") == "" {
		t.Fatalf("join under the threshold: %d %s, want admitted at once with the cookie", code, raw)
	}

	// The fourth visitor is over the threshold: the waiting page.
	third := browserish(t)
	resp, _ := getVia(t, third, gw.URL()+page, nil)
	wantPage := "/e/site?return=" + url.QueryEscape(page)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != gw.URL()+wantPage {
		t.Fatalf("third visitor: %d to %q, want 302 to %q", resp.StatusCode, resp.Header.Get("Location"), wantPage)
	}
	var joined struct {
		State    string `json:"state"`
		Position int64  `json:"position"`
		Token    string `json:"admission_token"`
	}
	code, raw := post(third, "/events/site/join")
	if err := json.Unmarshal(raw, &joined); err != nil || code != http.StatusOK || joined.State != "waiting" || joined.Position != 4 || joined.Token != "" {
		t.Fatalf("fourth visitor's join: %d %s, want waiting at position 4", code, raw)
	}
	nodetest.WaitFor(t, "queueing_started", 20*time.Second, func() bool { return contains(lifecycleTypes(t, n, "site"), "queueing_started") })

	// The first three never come back: their admissions expire (10 s)
	// and the queued visitor is admitted.
	nodetest.WaitFor(t, "the third visitor's admission", 40*time.Second, func() bool {
		resp, body := getVia(t, third, gw.URL()+"/events/site/status", nil)
		var st struct {
			Token string `json:"admission_token"`
		}
		_ = json.Unmarshal(body, &st)
		return resp.StatusCode == http.StatusOK && st.Token != ""
	})
	if resp, body := getVia(t, third, gw.URL()+page, nil); resp.StatusCode != http.StatusOK || string(body) != "shop page" {
		t.Fatalf("third visitor once admitted: %d %q, want the site", resp.StatusCode, body)
	}
	nodetest.WaitFor(t, "queueing_stopped", 20*time.Second, func() bool { return contains(lifecycleTypes(t, n, "site"), "queueing_stopped") })

	// The visitor who joined through the page: once the admission TTL and
	// the grace have passed since its admission, its ticket no longer
	// fetches a token (401: join again), and the join decides: the same
	// entry while its admission is still active (polls that fetched a
	// token before the 401 renewed it), else a new entry (it left), here
	// admitted at once either way: only the fourth visitor is active.
	nodetest.WaitFor(t, "the left visitor's ticket to go stale", 30*time.Second, func() bool {
		resp, _ := getVia(t, paged, gw.URL()+"/events/site/status", nil)
		return resp.StatusCode == http.StatusUnauthorized
	})
	code, raw = post(paged, "/events/site/join")
	if err := json.Unmarshal(raw, &joined); err != nil || code != http.StatusOK || joined.State != "admitted" || (joined.Position != 3 && joined.Position != 5) || joined.Token == "" {
		t.Fatalf("the page visitor's join again: %d %s, want entry 3 or a new entry 5 admitted, with a token", code, raw)
	}
}
