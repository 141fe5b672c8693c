package protect

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// fakeVisitorCookies is a hand-written fake of *tokens.Visitors.
type fakeVisitorCookies struct {
	newFn    func() (id, cookie string, err error)
	verifyFn func(cookie string) (string, error)
}

func (f fakeVisitorCookies) New() (string, string, error)         { return f.newFn() }
func (f fakeVisitorCookies) Verify(cookie string) (string, error) { return f.verifyFn(cookie) }

// fakeUserTokens is a hand-written fake of *tokens.UserVerifier.
type fakeUserTokens struct {
	verifyFn func(raw string, now time.Time) (string, error)
}

func (f fakeUserTokens) Verify(raw string, now time.Time) (string, error) {
	return f.verifyFn(raw, now)
}

// identityApp answers POST / with the caller's user id, asking id with mint.
func identityApp(id Identity, mint bool) *fiber.App {
	app := fiber.New(fiber.Config{ErrorHandler: kit.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	app.Post("/", func(c *fiber.Ctx) error {
		u, err := id.User(c, mint)
		if err != nil {
			return err
		}
		return c.SendString(u)
	})
	return app
}

type identityAnswer struct {
	status    int
	body      string
	setCookie string
}

func askIdentity(t *testing.T, app *fiber.App, hdr map[string]string) identityAnswer {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := app.Test(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return identityAnswer{status: resp.StatusCode, body: string(body), setCookie: resp.Header.Get("Set-Cookie")}
}

func TestVisitorIdentity(t *testing.T) {
	visitors := fakeVisitorCookies{
		newFn: func() (string, string, error) { return "fresh", "fresh.mac", nil },
		verifyFn: func(cookie string) (string, error) {
			if id, ok := strings.CutSuffix(cookie, ".mac"); ok {
				return id, nil
			}
			return "", errors.New("bad mac")
		},
	}
	cases := []struct {
		name      string
		mint      bool
		hdr       map[string]string
		status    int
		body      string
		cookie    []string // parts the Set-Cookie line must have
		noCookie  bool
		notSecure bool
	}{
		{name: "join without cookie", mint: true, status: 200, body: "fresh",
			cookie: []string{"anteroom_visitor=fresh.mac", "HttpOnly", "SameSite=Lax", "path=/", "max-age=2592000"}, notSecure: true},
		{name: "join over TLS", mint: true, hdr: map[string]string{"X-Forwarded-Proto": "https"}, status: 200, body: "fresh",
			cookie: []string{"anteroom_visitor=fresh.mac", "secure"}},
		{name: "join with a valid cookie", mint: true, hdr: map[string]string{"Cookie": "anteroom_visitor=v1.mac"}, status: 200, body: "v1", noCookie: true},
		{name: "join with a forged cookie", mint: true, hdr: map[string]string{"Cookie": "anteroom_visitor=v1.forged"}, status: 200, body: "fresh",
			cookie: []string{"anteroom_visitor=fresh.mac"}},
		{name: "valid cookie", hdr: map[string]string{"Cookie": "anteroom_visitor=v1.mac"}, status: 200, body: "v1", noCookie: true},
		{name: "no cookie", status: 401, body: `"unauthenticated"`, noCookie: true},
		{name: "forged cookie", hdr: map[string]string{"Cookie": "anteroom_visitor=v1.forged"}, status: 401, body: `"unauthenticated"`, noCookie: true},
		{name: "X-User-ID is no identity", hdr: map[string]string{"X-User-ID": "v1"}, status: 401, body: `"unauthenticated"`, noCookie: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := askIdentity(t, identityApp(VisitorIdentity{Visitors: visitors}, tc.mint), tc.hdr)
			if a.status != tc.status || !strings.Contains(a.body, tc.body) {
				t.Errorf("got %d %s, want %d with %s", a.status, a.body, tc.status, tc.body)
			}
			low := strings.ToLower(a.setCookie)
			for _, part := range tc.cookie {
				if !strings.Contains(low, strings.ToLower(part)) {
					t.Errorf("Set-Cookie %q lacks %s", a.setCookie, part)
				}
			}
			if tc.noCookie && a.setCookie != "" {
				t.Errorf("Set-Cookie %q, want none", a.setCookie)
			}
			if tc.notSecure && strings.Contains(low, "secure") {
				t.Errorf("Set-Cookie %q is Secure over plain HTTP", a.setCookie)
			}
		})
	}
}

func TestUserTokenIdentity(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)
	users := fakeUserTokens{verifyFn: func(raw string, now time.Time) (string, error) {
		if !now.Equal(at) {
			return "", errors.New("wrong clock")
		}
		switch raw {
		case "alice-token":
			return "alice", nil
		case "odd-token":
			return "has space", nil
		}
		return "", errors.New("bad token")
	}}
	cases := []struct {
		name   string
		header string
		hdr    map[string]string
		status int
		body   string
	}{
		{name: "token", hdr: map[string]string{"X-User-Token": "alice-token"}, status: 200, body: "alice"},
		{name: "bearer token", hdr: map[string]string{"X-User-Token": "Bearer alice-token"}, status: 200, body: "alice"},
		{name: "token and a spoofed X-User-ID", hdr: map[string]string{"X-User-Token": "alice-token", "X-User-ID": "bob"}, status: 200, body: "alice"},
		{name: "custom header", header: "X-Shop-Session", hdr: map[string]string{"X-Shop-Session": "alice-token"}, status: 200, body: "alice"},
		{name: "custom header ignores the default", header: "X-Shop-Session", hdr: map[string]string{"X-User-Token": "alice-token"}, status: 401, body: `"unauthenticated"`},
		{name: "X-User-ID alone", hdr: map[string]string{"X-User-ID": "alice"}, status: 401, body: `"unauthenticated"`},
		{name: "token in Authorization", hdr: map[string]string{"Authorization": "Bearer alice-token"}, status: 401, body: `"unauthenticated"`},
		{name: "invalid token", hdr: map[string]string{"X-User-Token": "forged"}, status: 401, body: `"unauthenticated"`},
		{name: "unusable sub", hdr: map[string]string{"X-User-Token": "odd-token"}, status: 401, body: `"unauthenticated"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := UserTokenIdentity{Verifier: users, Header: tc.header, Now: func() time.Time { return at }}
			a := askIdentity(t, identityApp(id, true), tc.hdr)
			if a.status != tc.status || !strings.Contains(a.body, tc.body) {
				t.Errorf("got %d %s, want %d with %s", a.status, a.body, tc.status, tc.body)
			}
			if tc.status != 200 && strings.Contains(a.body, "bad token") {
				t.Errorf("the verifier's error reached the client: %s", a.body)
			}
		})
	}
}
