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

// seatGuard's poll verifies every ticket as alice's at seq.
type seatGuard struct {
	openGuard
	seq int64
}

func (g seatGuard) Poll(*fiber.Ctx, *event.Config, time.Time) (tokens.Ticket, error) {
	return tokens.Ticket{Event: "drop", User: "alice", Seq: g.seq, IssuedAt: time.Now().Add(-time.Minute)}, nil
}

// pollView is the node's view for a basic-page poll: nothing held.
type pollView struct{ claimView }

func (pollView) Held(string, int64) bool                                         { return false }
func (pollView) LateShow(string, int64)                                          {}
func (pollView) ShownETA(*admission.Sale, string, time.Time, admission.Decision) {}

// fixedForms hands out one form token.
type fixedForms struct{}

func (fixedForms) FormToken(ev, user string) string           { return "tok-" + ev + "-" + user }
func (fixedForms) CheckForm(*fiber.Ctx, string, string) error { return nil }

// lastView records the view the page was rendered with.
type lastView struct{ v BasicView }

func (r *lastView) Basic(c *fiber.Ctx, _ *admission.Sale, v BasicView) error {
	r.v = v
	return c.SendString("page")
}

// TestBasicPagePoll: the basic page is a status poll answered from the
// node's view alone — its Deps have no joiner, claim service or store,
// so a Redis call would panic — waiting at the decision's poll pace, and
// once admitted with the turnstile's admission in its cookie, a form
// token bound to the caller and a new idempotency key at every render.
func TestBasicPagePoll(t *testing.T) {
	keys, err := tokens.OpenKeyDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	iss := tokens.NewIssuer(keys, tokens.IssuerConfig{})
	now := time.Now()
	for _, tc := range []struct {
		name  string
		seq   int64
		state admission.State
	}{
		{"waiting", 40, admission.Waiting},
		{"admitted", 2, admission.Admitted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sale := &admission.Sale{Config: event.Config{ID: "drop", PerUserLimit: 1, Buckets: 1, AdmitRatePerSecond: 1, AdmissionTTLSeconds: 300,
				PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)},
				Reading: admission.Reading{Frontier: 3, Joined: 50, WindowFrozen: true}}
			rec := &lastView{}
			view := &pollView{}
			api := New(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{
				Sales: view, Turnstile: turnstile.New(iss, view, nil), Identity: headerUser{},
				Guard: seatGuard{seq: tc.seq}, Basic: rec, Forms: fixedForms{},
			})
			app := fiber.New(fiber.Config{ErrorHandler: kit.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
			api.MountBasic(app, kit.LoadSale(func(id string) (*admission.Sale, bool) { return sale, id == "drop" }), func(c *fiber.Ctx) error { return c.Next() })
			var keys []string
			for range 2 {
				req := httptest.NewRequest("GET", "/e/drop/basic", nil)
				req.Header.Set("Cookie", kit.TicketCookie("drop")+"=t")
				req.Header.Set("X-User-ID", "alice")
				resp, err := app.Test(req, -1)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != 200 || rec.v.State != string(tc.state) {
					t.Fatalf("%d, state %q, want 200 %s", resp.StatusCode, rec.v.State, tc.state)
				}
				admitted := false
				for _, c := range resp.Cookies() {
					if c.Name == AdmissionCookie("drop") {
						admitted = true
						if _, err := iss.Verify(c.Value, "drop", time.Now()); err != nil || !c.HttpOnly {
							t.Errorf("admission cookie %+v: %v, want an HttpOnly admission token", c, err)
						}
					}
				}
				keys = append(keys, rec.v.Idem)
				switch tc.state {
				case admission.Waiting:
					if admitted || rec.v.Form != "" || rec.v.Refresh < admission.MinPoll*8/10 || rec.v.Refresh > admission.MaxPoll*12/10 || rec.v.Position != 40 {
						t.Errorf("waiting: admission cookie %v, view %+v; want no form, position 40, a refresh within the poll's bounds", admitted, rec.v)
					}
				case admission.Admitted:
					if !admitted || rec.v.Form != "tok-drop-alice" || rec.v.Idem == "" || !validIdemKey(rec.v.Idem) || rec.v.Refresh <= 0 || rec.v.Refresh >= 300*time.Second {
						t.Errorf("admitted: admission cookie %v, view %+v; want the cookie, alice's form token, an idempotency key and a refresh before the admission ends", admitted, rec.v)
					}
				}
			}
			if tc.state == admission.Admitted && keys[0] == keys[1] {
				t.Errorf("two renders share the idempotency key %q", keys[0])
			}
		})
	}
}
