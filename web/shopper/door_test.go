package shopper

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// made records every place and admission the fakes below hand out.
type made struct {
	mu   sync.Mutex
	what []string
}

func (m *made) add(s string) { m.mu.Lock(); m.what = append(m.what, s); m.mu.Unlock() }

func (m *made) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.what
	m.what = nil
	return w
}

// placeJoiner gives every joiner a place.
type placeJoiner struct{ *made }

func (j placeJoiner) Join(_ context.Context, _, user string, _ queue.Times) (queue.Entry, error) {
	j.add("queue place")
	return queue.Entry{Seq: 7, JoinedAt: time.Now().Truncate(time.Second)}, nil
}

// enterAll lets everyone into a safety-net room at once.
type enterAll struct{ *made }

func (r enterAll) Enter(context.Context, string, admission.Entrance) (admission.Entered, error) {
	r.add("room place")
	return admission.Entered{Entry: queue.Entry{Seq: 1, JoinedAt: time.Now().Truncate(time.Second)}, Admitted: true}, nil
}

// redeemAll spends a use of any pass.
type redeemAll struct{ *made }

func (p redeemAll) Redeem(context.Context, string, string, string) (int, error) {
	p.add("pass use")
	return 1, nil
}
func (redeemAll) Refused(context.Context, string, string) error { return nil }

// anyPass verifies every pass; anyInvite every invite, for lane members.
type (
	anyPass   struct{}
	anyInvite struct{}
)

func (anyPass) Verify(_, ev string, now time.Time) (tokens.Pass, bool, error) {
	return tokens.Pass{ID: "0123456789abcdef", Event: ev, Uses: 1, ExpiresAt: now.Add(time.Hour)}, false, nil
}
func (anyInvite) VerifyLane(string, string, string, time.Time) (string, error) { return "members", nil }

// plainTickets signs every ticket "ticket"; noClaims holds none.
type (
	plainTickets struct{}
	noClaims     struct{}
)

func (plainTickets) Sign(tokens.Ticket) (string, error) { return "ticket", nil }
func (noClaims) Lookup(context.Context, string, string) (claim.Record, error) {
	return claim.Record{}, errors.New("no claims here")
}
func (noClaims) Mine(context.Context, claim.Sale, string) ([]claim.Record, error) { return nil, nil }

// waysIn are the routes that hand out a place or an admission in an open
// room (door.go): the two joins (a plain join, a lane invite, a pass, a
// room's join), the status poll that admits the holder of a place the
// frontier passed, and a safety-net room's gate, which admits at once.
// A route added that hands out either must be added here, and must
// refuse a closed room (TestEveryWayInAsksOpen).
var waysIn = []string{"GET /e/:id/basic/", "GET /events/:id/gate", "GET /events/:id/status", "POST /e/:id/basic/join", "POST /events/:id/join"}

// TestEveryWayInAsksOpen walks every route the API mounts, with every
// credential a way in could use (a ticket whose place the frontier
// passed, a form token, a pass, a lane invite, an admission), in a sale
// and in a safety-net room. Open, the routes that hand out a place or an
// admission are exactly waysIn (so the walk reaches them). Closed by
// staff, none hands out anything, and the joins answer 503 closed: a way
// in that forgets the closure (as the basic page's join form did) fails
// here.
func TestEveryWayInAsksOpen(t *testing.T) {
	keys, err := tokens.OpenKeyDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	iss := tokens.NewIssuer(keys, tokens.IssuerConfig{})
	m := &made{}
	view := &pollView{}
	now := time.Now()
	base := event.Config{ID: "drop", PerUserLimit: 1, Buckets: 1, AdmitRatePerSecond: 10, AdmissionTTLSeconds: 300, MaxActive: 1000,
		PrequeueOpensAt: now.Add(-time.Hour), StartsAt: now.Add(-time.Hour), EndsAt: now.Add(time.Hour)}
	room := base
	room.Mode = event.SafetyNet
	base.Lanes = []event.Lane{{Name: "members", Share: 0.5}}
	adm, _, err := iss.Issue("drop", "alice", 2, 5*time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string]map[string]string{
		"plain": {},
		"admitted": {"Authorization": "Bearer " + adm,
			"Cookie": kit.TicketCookie("drop") + "=t; " + AdmissionCookie("drop") + "=" + adm},
		"pass":   {tokens.PassHeader: "pass"},
		"invite": {tokens.InviteHeader: "invite"},
	}
	for _, closed := range []bool{false, true} {
		for name, cfg := range map[string]event.Config{"sale": base, "room": room} {
			if closed {
				cfg.Closed = &event.Closure{Message: "back soon"}
			}
			sale := &admission.Sale{Config: cfg, Reading: admission.Reading{Frontier: 100, Joined: 100, WindowFrozen: true}}
			api := New(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Deps{
				Sales: view, Joiner: placeJoiner{m}, Tickets: plainTickets{}, Turnstile: turnstile.New(iss, view, func(string) { m.add("admission") }),
				Claims: &grantAll{}, Store: noClaims{}, Identity: headerUser{}, Guard: seatGuard{seq: 2}, IsAdmin: func(*fiber.Ctx) bool { return false },
				Invites: anyInvite{}, PassTokens: anyPass{}, Passes: redeemAll{m}, Rooms: enterAll{m}, Basic: &lastView{}, Forms: fixedForms{},
			})
			app := fiber.New(fiber.Config{ErrorHandler: kit.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil)))})
			load := kit.LoadSale(func(id string) (*admission.Sale, bool) { return sale, id == "drop" })
			pass := func(c *fiber.Ctx) error { return c.Next() }
			api.Mount(app.Group("/events/:id", load), pass)
			api.MountBasic(app, load, pass)
			var gave []string
			for _, r := range app.GetRoutes(true) {
				if r.Method == fiber.MethodHead {
					continue // a GET's twin
				}
				route := r.Method + " " + r.Path
				path := strings.NewReplacer(":id", "drop", ":claim_id", "0-c1", ":jti", "j1").Replace(r.Path)
				for vname, hdr := range variants {
					req := httptest.NewRequest(r.Method, path, strings.NewReader("form=tok-drop-alice&idem=k1"))
					req.Header.Set("Content-Type", fiber.MIMEApplicationForm)
					req.Header.Set("X-User-ID", "alice")
					req.Header.Set("Idempotency-Key", "k1")
					req.Header.Set("Cookie", kit.TicketCookie("drop")+"=t")
					for k, v := range hdr {
						req.Header.Set(k, v)
					}
					resp, err := app.Test(req, -1)
					if err != nil {
						t.Fatalf("%s: %v", route, err)
					}
					got := m.take()
					if len(got) > 0 && !slices.Contains(gave, route) {
						gave = append(gave, route)
					}
					if !closed {
						continue
					}
					if len(got) > 0 {
						t.Errorf("%s %s (%s) in a closed room handed out %v", name, route, vname, got)
					}
					if r.Method == fiber.MethodPost && strings.HasSuffix(r.Path, "/join") && resp.StatusCode != fiber.StatusServiceUnavailable {
						t.Errorf("%s %s (%s) in a closed room: %d, want 503 closed", name, route, vname, resp.StatusCode)
					}
				}
			}
			slices.Sort(gave)
			if !closed {
				want := slices.DeleteFunc(slices.Clone(waysIn), func(w string) bool {
					// A room admits through its page's script and its gate; a sale has no gate entry.
					return name == "room" && w == "POST /e/:id/basic/join" || name == "sale" && w == "GET /events/:id/gate"
				})
				slices.Sort(want)
				if !slices.Equal(gave, want) {
					t.Errorf("open %s: the routes that handed out a place or an admission are %v, want %v (waysIn)", name, gave, want)
				}
			}
		}
	}
}
