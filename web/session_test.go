package web

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/staffapi"
	"github.com/gofiber/fiber/v2"
)

// consoleSales is the node's view with one sale; other methods panic.
type consoleSales struct {
	sales
	sale *admission.Sale
}

func (f consoleSales) Get(id string) (*admission.Sale, bool) { return f.sale, id == f.sale.Config.ID }
func (f consoleSales) All() []*admission.Sale                { return []*admission.Sale{f.sale} }

func testSale() *admission.Sale {
	now := time.Now()
	return &admission.Sale{
		Config: event.Config{
			ID: "ev", Name: "test", Supply: 10, PerUserLimit: 1, Mode: event.FCFS,
			PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour),
			AdmitRatePerSecond: 10, Buckets: 1, Seed: "00ff", SeedCommitment: "abcd",
		},
		Reading:   admission.Reading{Frontier: 3, Joined: 5},
		Remaining: 7,
	}
}

const testAdminToken = "admin-token-0123456789"

func testApp(tb testing.TB) *fiber.App {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return mustNew(tb, Config{AdminToken: testAdminToken, Log: log}, Deps{Sales: consoleSales{sale: testSale()}})
}

func send(t *testing.T, app *fiber.App, method, path string, hdr map[string]string, body string) (*http.Response, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := app.Test(req, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp, out
}

// TestConsoleSession signs in, uses the session for reads, and shows that
// a change made with the session cookie needs the session's CSRF token.
func TestConsoleSession(t *testing.T) {
	app := testApp(t)
	jsonHdr := map[string]string{"Content-Type": "application/json"}
	if r, p := send(t, app, "POST", "/admin/session", jsonHdr, `{"token":"wrong"}`); r.StatusCode != 401 || p["code"] != "unauthenticated" {
		t.Fatalf("wrong token: %d %v, want 401 unauthenticated", r.StatusCode, p)
	}
	if r, _ := send(t, app, "POST", "/admin/session", map[string]string{"Content-Type": "text/plain"}, `{"token":"`+testAdminToken+`"}`); r.StatusCode != 400 {
		t.Fatalf("text/plain sign-in: %d, want 400", r.StatusCode)
	}
	r, body := send(t, app, "POST", "/admin/session", jsonHdr, `{"token":"`+testAdminToken+`"}`)
	if r.StatusCode != 200 {
		t.Fatalf("sign in: %d %v", r.StatusCode, body)
	}
	setCookie := r.Header.Get("Set-Cookie")
	for _, want := range []string{staffapi.ConsoleCookie + "=", "HttpOnly", "SameSite=Strict", "path=/admin"} {
		if !strings.Contains(strings.ToLower(setCookie), strings.ToLower(want)) {
			t.Errorf("Set-Cookie %q lacks %q", setCookie, want)
		}
	}
	if strings.Contains(strings.ToLower(setCookie), "secure") {
		t.Errorf("Set-Cookie %q is Secure on plain HTTP", setCookie)
	}
	cookie := strings.SplitN(setCookie, ";", 2)[0]
	csrf, _ := body["csrf_token"].(string)
	withCookie := map[string]string{"Cookie": cookie}

	if r, p := send(t, app, "GET", "/admin/session", withCookie, ""); r.StatusCode != 200 || p["csrf_token"] != csrf {
		t.Errorf("session info: %d %v, want the same csrf token", r.StatusCode, p)
	}
	r, list := send(t, app, "GET", "/admin/events", withCookie, "")
	events, _ := list["events"].([]any)
	if r.StatusCode != 200 || len(events) != 1 {
		t.Fatalf("list: %d %v, want one event", r.StatusCode, list)
	}
	if row := events[0].(map[string]any); row["id"] != "ev" || row["admitted"] != 3.0 || row["seed"] != nil {
		t.Errorf("list row %v: want ev, admitted 3, no seed", row)
	}
	if r, _ := send(t, app, "GET", "/admin/events", nil, ""); r.StatusCode != 401 {
		t.Errorf("list without credentials: %d, want 401", r.StatusCode)
	}

	refused := []struct {
		name, method, path string
		hdr                map[string]string
		status             int
		code               string
	}{
		{"pause without csrf", "POST", "/admin/events/ev/pause", withCookie, 403, "forbidden"},
		{"pause with wrong csrf", "POST", "/admin/events/ev/pause", map[string]string{"Cookie": cookie, staffapi.CSRFHeader: csrf[:len(csrf)-2] + "AA"}, 403, "forbidden"},
		{"put without csrf", "PUT", "/admin/events/ev", withCookie, 403, "forbidden"},
		{"sign out without csrf", "DELETE", "/admin/session", withCookie, 403, "forbidden"},
		{"forged cookie", "POST", "/admin/events/ev/pause", map[string]string{"Cookie": cookie + "x", staffapi.CSRFHeader: csrf}, 401, "unauthenticated"},
		{"csrf without cookie", "POST", "/admin/events/ev/pause", map[string]string{staffapi.CSRFHeader: csrf}, 401, "unauthenticated"},
	}
	for _, tc := range refused {
		r, p := send(t, app, tc.method, tc.path, tc.hdr, `{}`)
		if r.StatusCode != tc.status || p["code"] != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, r.StatusCode, p, tc.status, tc.code)
		}
	}

	r, _ = send(t, app, "DELETE", "/admin/session", map[string]string{"Cookie": cookie, staffapi.CSRFHeader: csrf}, "")
	if r.StatusCode != 204 || !strings.Contains(r.Header.Get("Set-Cookie"), "1970") {
		t.Errorf("sign out: %d Set-Cookie %q, want 204 and an expired cookie", r.StatusCode, r.Header.Get("Set-Cookie"))
	}
}
