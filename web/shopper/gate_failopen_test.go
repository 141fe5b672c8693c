package shopper

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// TestGateFailOpenClock steps the node's clock across a fail-open's
// deadline, in a sale and in a safety-net room: before it the gate lets
// everyone through (204, X-Anteroom-Fail-Open, nothing handed out: no
// entrance, no admission, no Redis), still naming an admitted visitor; a
// claim without an admission is refused meanwhile; from the deadline on,
// with nobody acting, it is the ordinary gate again (the sale's 401, the
// room's entrance).
func TestGateFailOpenClock(t *testing.T) {
	keys, err := tokens.OpenKeyDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	iss := tokens.NewIssuer(keys, tokens.IssuerConfig{})
	t0 := time.Now().Truncate(time.Second)
	until := t0.Add(time.Hour)
	adm, _, err := iss.Issue("drop", "alice", 2, 2*time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	base := event.Config{ID: "drop", PerUserLimit: 1, Buckets: 1, AdmitRatePerSecond: 10, AdmissionTTLSeconds: 7200, MaxActive: 1000,
		PrequeueOpensAt: t0.Add(-time.Hour), StartsAt: t0.Add(-time.Hour), EndsAt: t0.Add(3 * time.Hour), FailOpenUntil: &until}
	room := base
	room.Mode = event.SafetyNet
	for name, cfg := range map[string]event.Config{"sale": base, "room": room} {
		m := &made{}
		view := &pollView{}
		now := t0
		sale := &admission.Sale{Config: cfg, Reading: admission.Reading{Frontier: 100, Joined: 100, WindowFrozen: true}}
		api := New(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: kit.Clock{Now: func() time.Time { return now }, NowAt: func(time.Time) time.Time { return now }}}, Deps{
			Sales: view, Joiner: placeJoiner{m}, Tickets: plainTickets{}, Turnstile: turnstile.New(iss, view, func(string) { m.add("admission") }),
			Claims: &grantAll{}, Store: noClaims{}, Identity: headerUser{}, Guard: seatGuard{seq: 2}, IsAdmin: func(*fiber.Ctx) bool { return false },
			Invites: anyInvite{}, PassTokens: anyPass{}, Passes: redeemAll{m}, Rooms: enterAll{m}, Basic: &lastView{}, Forms: fixedForms{},
		})
		app := fiber.New(fiber.Config{ErrorHandler: kit.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
		api.Mount(app.Group("/events/:id", kit.LoadSale(func(id string) (*admission.Sale, bool) { return sale, id == "drop" })), func(c *fiber.Ctx) error { return c.Next() })
		call := func(method, path string, hdr map[string]string) (int, map[string]string) {
			req := httptest.NewRequest(method, path, nil)
			req.Header.Set("X-User-ID", "bob")
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			return resp.StatusCode, map[string]string{"fail-open": resp.Header.Get(GateFailOpenHeader), "user": resp.Header.Get(GateUserHeader), "cookie": resp.Header.Get("Set-Cookie")}
		}
		stamp := until.UTC().Format(time.RFC3339)
		for _, at := range []time.Time{t0, until.Add(-time.Nanosecond)} {
			now = at
			if st, h := call("GET", "/events/drop/gate", nil); st != fiber.StatusNoContent || h["fail-open"] != stamp || h["user"] != "" || h["cookie"] != "" {
				t.Errorf("%s at %s: anonymous gate %d %v, want 204 failing open until %s, nobody named, no cookie", name, at, st, h, stamp)
			}
			if st, h := call("GET", "/events/drop/gate", map[string]string{"Authorization": "Bearer " + adm}); st != fiber.StatusNoContent || h["user"] != "alice" || h["fail-open"] != stamp {
				t.Errorf("%s at %s: admitted gate %d %v, want 204 naming alice", name, at, st, h)
			}
			if got := m.take(); len(got) > 0 {
				t.Errorf("%s at %s: failing open handed out %v, want nothing", name, at, got)
			}
			if st, _ := call("POST", "/events/drop/claim", map[string]string{"Idempotency-Key": "k1"}); st != fiber.StatusUnauthorized && st != fiber.StatusForbidden {
				t.Errorf("%s at %s: a claim without an admission while failing open: %d, want refused", name, at, st)
			}
		}
		now = until
		st, h := call("GET", "/events/drop/gate", nil)
		switch {
		case h["fail-open"] != "":
			t.Errorf("%s at the deadline: still failing open (%v)", name, h)
		case name == "sale" && st != fiber.StatusUnauthorized:
			t.Errorf("sale at the deadline: gate %d, want 401", st)
		case name == "room" && (st != fiber.StatusNoContent || h["cookie"] == ""):
			t.Errorf("room at the deadline: gate %d %v, want its entrance (204 with an admission cookie)", st, h)
		}
	}
}
