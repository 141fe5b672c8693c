package node_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/web/staffapi"
)

// TestDemoSignInLink: the demo's one-time console link, on a node that
// trusts loopback as its proxy. A link presented through a proxy (a
// trusted one naming a remote client, or loopback forwarding with any
// forwarding header) or naming a bad event is refused, creates nothing
// and is not spent; from loopback it signs the account in (the normal
// session cookie, audited), sends the browser to the sale's console, and
// is spent: a second use is 401 with no cookie. An expired link, and a
// link of an account whose role changed since, are 401 too.
func TestDemoSignInLink(t *testing.T) {
	n := nodetest.Start(t, node.Config{DemoSignInLinks: true, TrustedProxies: []string{"127.0.0.1"}})
	ctx := context.Background()
	nodetest.CreateSale(t, n, "gala", openSale(10, 1, 0, 0, 10))
	bearer := map[string]string{"Authorization": "Bearer " + n.AdminToken, "Content-Type": "application/json"}
	if a := nodetest.Call(t, http.MethodPost, n.URL()+"/admin/accounts", bearer,
		[]byte(`{"name":"demo","role":"admin","password":"a long password of the demo"}`)); a.Status != http.StatusCreated {
		t.Fatalf("create the demo account: %d %s", a.Status, a.Raw)
	}
	accounts := staff.NewAccounts(n.Redis())
	var mintAt func(now time.Time, ttl time.Duration) string
	mint := func(ttl time.Duration) string {
		t.Helper()
		return mintAt(time.Now(), ttl)
	}
	mintAt = func(now time.Time, ttl time.Duration) string {
		t.Helper()
		acc, err := accounts.Get(ctx, "demo")
		if err != nil {
			t.Fatal(err)
		}
		tok, err := n.SignInLinks.Mint(ctx, acc, now, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	follow := func(tok, ev string, hdr map[string]string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, n.URL()+staffapi.SignInLinkPath+"?token="+tok+"&event="+ev, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var p map[string]any
		_ = json.Unmarshal(raw, &p)
		return resp, p
	}
	refused := func(what string, resp *http.Response, p map[string]any, status int, code string) {
		t.Helper()
		if resp.StatusCode != status || p["code"] != code {
			t.Errorf("%s: %d %v, want %d %s", what, resp.StatusCode, p, status, code)
		}
		if c := resp.Header.Get("Set-Cookie"); c != "" {
			t.Errorf("%s: Set-Cookie %q, want none", what, c)
		}
	}

	audit := staff.NewAudit(n.Redis())
	before, err := audit.List(ctx, staff.Query{})
	if err != nil {
		t.Fatal(err)
	}
	tok := mint(time.Minute)
	for name, hdr := range map[string]map[string]string{
		"a trusted proxy naming a remote client": {"X-Forwarded-For": "203.0.113.9"},
		"a trusted proxy naming loopback":        {"X-Forwarded-For": "127.0.0.1"},
		"a client naming loopback twice":         {"X-Forwarded-For": "127.0.0.1, 127.0.0.1"},
		"Forwarded":                              {"Forwarded": "for=127.0.0.1"},
		"X-Real-IP":                              {"X-Real-IP": "127.0.0.1"},
		"Via":                                    {"Via": "1.1 proxy"},
	} {
		resp, p := follow(tok, "gala", hdr)
		refused(name, resp, p, http.StatusForbidden, "forbidden")
	}
	resp, p := follow(tok, "Not%20An%20Event", nil)
	refused("a bad event", resp, p, http.StatusBadRequest, "bad_request")
	resp, p = follow(tok, "gala", map[string]string{"Sec-Purpose": "prefetch;prerender"})
	refused("a prerender", resp, p, http.StatusBadRequest, "bad_request")
	head, err := noFollow.Head(n.URL() + staffapi.SignInLinkPath + "?token=" + tok + "&event=gala")
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != http.StatusBadRequest || head.Header.Get("Set-Cookie") != "" {
		t.Errorf("HEAD of the link: %d Set-Cookie %q, want 400 and none", head.StatusCode, head.Header.Get("Set-Cookie"))
	}
	if after, _ := audit.List(ctx, staff.Query{}); len(after) != len(before) {
		t.Errorf("the audit after the refusals: %d entries, want %d (nothing created)", len(after), len(before))
	}

	// From loopback: signed in, once.
	resp, p = follow(tok, "gala", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/?event=gala" {
		t.Fatalf("the link from loopback: %d Location %q %v, want 303 to /admin/?event=gala", resp.StatusCode, resp.Header.Get("Location"), p)
	}
	if got := resp.Header.Get("Referrer-Policy") + " " + resp.Header.Get("Cache-Control"); got != "no-referrer no-store" {
		t.Errorf("Referrer-Policy and Cache-Control %q, want no-referrer no-store", got)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == staffapi.ConsoleCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/admin" {
		t.Fatalf("session cookie %+v, want %s HttpOnly SameSite=Strict on /admin", cookie, staffapi.ConsoleCookie)
	}
	session := map[string]string{"Cookie": cookie.Name + "=" + cookie.Value}
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/session", session, nil); a.Status != http.StatusOK ||
		nodetest.Str(a.Body, "account") != "demo" || nodetest.Str(a.Body, "role") != "admin" {
		t.Fatalf("the session: %d %s, want demo, admin", a.Status, a.Raw)
	}
	if a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/gala", session, nil); a.Status != http.StatusOK {
		t.Fatalf("the sale with the session: %d %s", a.Status, a.Raw)
	}
	entries, err := audit.List(ctx, staff.Query{Limit: 1})
	if err != nil || len(entries) != 1 || entries[0].Action != "session.sign_in" || entries[0].Who != "demo" || !strings.Contains(string(entries[0].After), `"via":"link"`) {
		t.Errorf("the last audit entry %+v (%v), want session.sign_in by demo via link", entries, err)
	}
	resp, p = follow(tok, "gala", nil)
	refused("the link again", resp, p, http.StatusUnauthorized, "unauthenticated")

	// Expired: made an hour ago, valid a minute (the embedded Redis keeps
	// the key: its PX never fires; the node's clock ends the link).
	tok = mintAt(time.Now().Add(-time.Hour), time.Minute)
	resp, p = follow(tok, "gala", nil)
	refused("an expired link", resp, p, http.StatusUnauthorized, "unauthenticated")

	// The account changed (a new password, a new incarnation) since the
	// link was made: it ends with the account's sessions.
	tok = mint(time.Minute)
	pw, err := staff.HashPassword("another long password")
	if err != nil {
		t.Fatal(err)
	}
	if err := accounts.ResetPassword(ctx, "demo", pw); err != nil {
		t.Fatal(err)
	}
	resp, p = follow(tok, "gala", nil)
	refused("a link of a changed account", resp, p, http.StatusUnauthorized, "unauthenticated")
}
