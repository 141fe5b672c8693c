package shopper

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// claimView records what the turnstile marks; the other methods of the
// view are not called by a claim.
type claimView struct{ claimed []int64 }

func (v *claimView) PresentAfter(string, int64, time.Duration) {}
func (v *claimView) Activate(context.Context, string, int64, time.Time) error {
	return nil
}
func (v *claimView) Session(string, string, int64) {}
func (v *claimView) ClaimedAfter(_ string, pos int64, _ time.Duration) {
	v.claimed = append(v.claimed, pos)
}

// headerUser names the caller by X-User-ID, no proxy check: a test's
// identity mode.
type headerUser struct{}

func (headerUser) User(c *fiber.Ctx, _ bool) (string, error) {
	if u := c.Get("X-User-ID"); u != "" {
		return u, nil
	}
	return "", kit.ErrNoToken
}

// openGuard lets every request through.
type openGuard struct{}

func (openGuard) Join(*fiber.Ctx, *event.Config, string) error     { return nil }
func (openGuard) JoinBusy(*fiber.Ctx, *event.Config, string) error { return nil }
func (openGuard) Signals(*fiber.Ctx, *event.Config, string) ([]claim.Signal, error) {
	return nil, nil
}
func (openGuard) Claim(*fiber.Ctx, *event.Config, string) error { return nil }
func (openGuard) Poll(*fiber.Ctx, *event.Config, time.Time) (tokens.Ticket, error) {
	return tokens.Ticket{}, nil
}

// grantAll grants every claim.
type grantAll struct{ got []claim.Request }

func (g *grantAll) Claim(_ context.Context, r claim.Request) (claim.Result, error) {
	g.got = append(g.got, r)
	return claim.Result{ClaimID: "0-c1", Status: "pending"}, nil
}

func (g *grantAll) Release(context.Context, string, string, string) (claim.Record, error) {
	return claim.Record{}, nil
}

// TestClaimWithItsOwnDeps runs the claim handler on shopper's own small
// Deps — a real issuer and turnstile, fakes for the rest, no Redis — where
// before it needed the whole server: the spending rules answer as the
// error table says, and a granted claim spends the admission.
func TestClaimWithItsOwnDeps(t *testing.T) {
	keys, err := tokens.OpenKeyDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	iss := tokens.NewIssuer(keys, tokens.IssuerConfig{})
	now := time.Now()
	tok, _, err := iss.Issue("drop", "alice", 7, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		mutate   func(*event.Config)
		user     string
		token    string
		status   int
		code     string
		spentPos []int64
	}{
		{"granted", nil, "alice", tok, 201, "", []int64{7}},
		{"another user", nil, "mallory", tok, 403, "forbidden", nil},
		{"no identity", nil, "", tok, 401, "unauthenticated", nil},
		{"no token", nil, "alice", "", 401, "unauthenticated", nil},
		{"forged", nil, "alice", tok + "x", 401, "unauthenticated", nil},
		{"paused", func(c *event.Config) { c.Paused = true }, "alice", tok, 503, "paused", nil},
		{"a room", func(c *event.Config) { c.Mode = event.SafetyNet }, "alice", tok, 403, "forbidden", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sale := &admission.Sale{Config: event.Config{ID: "drop", PerUserLimit: 1, Buckets: 1, ClaimTTLSeconds: 60,
				PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)}}
			if tc.mutate != nil {
				tc.mutate(&sale.Config)
			}
			view, claims := &claimView{}, &grantAll{}
			api := New(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{
				Turnstile: turnstile.New(iss, view, nil), Identity: headerUser{}, Guard: openGuard{}, Claims: claims,
			})
			app := fiber.New(fiber.Config{ErrorHandler: kit.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
			api.Mount(app.Group("/events/:id", kit.LoadSale(func(id string) (*admission.Sale, bool) { return sale, id == "drop" })),
				func(c *fiber.Ctx) error { return c.Next() })
			req := httptest.NewRequest("POST", "/events/drop/claim", nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.user != "" {
				req.Header.Set("X-User-ID", tc.user)
			}
			resp, err := app.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != tc.status || (tc.code != "" && body["code"] != tc.code) {
				t.Fatalf("%d %v, want %d %s", resp.StatusCode, body, tc.status, tc.code)
			}
			if len(view.claimed) != len(tc.spentPos) || (len(tc.spentPos) > 0 && view.claimed[0] != tc.spentPos[0]) {
				t.Errorf("spent %v, want %v", view.claimed, tc.spentPos)
			}
			if tc.status == 201 && (len(claims.got) != 1 || claims.got[0].User != "alice" || claims.got[0].Pos != 7) {
				t.Errorf("claims asked %+v, want alice's at 7", claims.got)
			}
			if tc.status != 201 && len(claims.got) != 0 {
				t.Errorf("a refused claim reached the claim service: %+v", claims.got)
			}
		})
	}
}
