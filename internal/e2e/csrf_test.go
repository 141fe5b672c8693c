package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/internal/node"
	"github.com/anteroom/anteroom/internal/nodetest"
	"github.com/chromedp/chromedp"
)

// TestConsoleRefusesWithoutCSRF: the console session cookie alone changes
// nothing — neither from a script in the console's own page that forgets
// the token, nor from a plain HTTP client holding the cookie.
func TestConsoleRefusesWithoutCSRF(t *testing.T) {
	n := startNode(t)
	browser := startBrowser(t)
	nodetest.CreateSale(t, n, "guarded", sale{supply: 10, opensIn: -2 * time.Second, startsIn: time.Minute, rate: 20})

	staff := signIn(t, browser, n)
	selectEvent(staff, "guarded")
	for name, hdr := range map[string]string{"no token": `{}`, "wrong token": `{"X-CSRF-Token": "forged"}`} {
		got := eval[string](staff, `fetch("/admin/events/guarded/pause", {method: "POST", credentials: "same-origin", headers: `+hdr+`})
			.then(async (r) => r.status + " " + (await r.json()).code)`)
		if got != "403 forbidden" {
			t.Errorf("console page, %s: %s, want 403 forbidden", name, got)
		}
	}
	if paused(t, n, "guarded") {
		t.Fatalf("a refused request paused the sale")
	}
	// The console's own button carries the token.
	staff.do(chromedp.Click(chromedp.ID("pause")))
	staff.waitJS("paused", `document.getElementById("badge").textContent === "paused"`, 10*time.Second)
	staff.shot("paused-with-token")

	// The same over plain HTTP.
	base := n.URL() + "/admin"
	in := nodetest.Call(t, http.MethodPost, base+"/session", map[string]string{"Content-Type": "application/json"}, []byte(`{"token":"`+n.AdminToken+`"}`))
	if in.Status != http.StatusOK {
		t.Fatalf("sign in: %d %s", in.Status, in.Raw)
	}
	setCookie := in.Header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(setCookie, want) {
			t.Errorf("session cookie %q lacks %s", setCookie, want)
		}
	}
	cookie := strings.SplitN(setCookie, ";", 2)[0]
	csrf := nodetest.Str(in.Body, "csrf_token")
	change := []byte(`{"admit_rate_per_second": 7}`)
	cases := []struct {
		name   string
		hdr    map[string]string
		status int
		code   string
	}{
		{"cookie without csrf", map[string]string{"Cookie": cookie}, 403, "forbidden"},
		{"cookie with a wrong csrf", map[string]string{"Cookie": cookie, "X-CSRF-Token": csrf[:len(csrf)-1] + "x"}, 403, "forbidden"},
		{"csrf without cookie", map[string]string{"X-CSRF-Token": csrf}, 401, "unauthenticated"},
		{"forged cookie", map[string]string{"Cookie": cookie[:len(cookie)-1] + "x", "X-CSRF-Token": csrf}, 401, "unauthenticated"},
		{"cookie with its csrf", map[string]string{"Cookie": cookie, "X-CSRF-Token": csrf}, 200, ""},
	}
	for _, tc := range cases {
		a := nodetest.Call(t, http.MethodPut, base+"/events/guarded", tc.hdr, change)
		if a.Status != tc.status || nodetest.Str(a.Body, "code") != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, a.Status, a.Raw, tc.status, tc.code)
		}
		if rate := rateOf(t, n, "guarded"); (rate == 7) != (tc.status == 200) {
			t.Errorf("%s: rate is now %v", tc.name, rate)
		}
	}
	if a := nodetest.Call(t, http.MethodDelete, base+"/session", map[string]string{"Cookie": cookie}, nil); a.Status != 403 {
		t.Errorf("sign out without csrf: %d, want 403", a.Status)
	}
	if a := nodetest.Call(t, http.MethodDelete, base+"/session", map[string]string{"Cookie": cookie, "X-CSRF-Token": csrf}, nil); a.Status != 204 {
		t.Errorf("sign out: %d, want 204", a.Status)
	}
}

func adminGet(t *testing.T, n *node.Node, id string) map[string]any {
	t.Helper()
	a := nodetest.Call(t, http.MethodGet, n.URL()+"/admin/events/"+id, map[string]string{"Authorization": "Bearer " + n.AdminToken}, nil)
	if a.Status != http.StatusOK {
		t.Fatalf("admin get %s: %d %s", id, a.Status, a.Raw)
	}
	cfg, _ := a.Body["config"].(map[string]any)
	return cfg
}

func paused(t *testing.T, n *node.Node, id string) bool {
	p, _ := adminGet(t, n, id)["paused"].(bool)
	return p
}

func rateOf(t *testing.T, n *node.Node, id string) float64 {
	r, _ := adminGet(t, n, id)["admit_rate_per_second"].(float64)
	return r
}
