package shopper

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// The basic page is the waiting room for a browser that runs no
// JavaScript (room.html's <noscript> leads there): GET /e/{id}/basic
// renders the visitor's place on the server and reloads itself with a
// meta refresh at the pace a status poll asks for; POST /e/{id}/basic/join
// and /claim are plain HTML forms. It is the JSON API's twin, not a
// second set of rules:
//
//   - the page is a status poll: the edge's status limits and ticket check
//     (Guard.Poll) and decide, the same decision and the same admission
//     (turnstile.Admit, Kind Queue) from the node's view, no Redis;
//   - the join form is a way in behind open, as join is (door.go: a
//     room staff closed refuses it with the closed page, and the lobby
//     shows the closure instead of the form), then runs join's defences
//     (Guard.Join) and enqueue; a sale
//     that asks for a proof of work, a captcha or an invite, which need the
//     page's script, refuses it with a page that says so;
//   - the claim form spends the admission cookie through spend
//     (turnstile.Authorize, Guard.Claim, the claim script), under the
//     idempotency key the page put in the form when it rendered it, so a
//     double submit or a resubmitted reload is a replay, never a second
//     claim;
//   - the ticket, the visitor and the admission ride in the cookies the
//     JSON API sets (HttpOnly, SameSite=Lax, Secure over TLS), and every
//     form post is checked by the edge's CheckForm (same site, and a form
//     token bound to the caller);
//   - every refusal is the problem of kit's error table, with its status,
//     shown as a page (Settle) instead of problem+json.

// BasicView is what the basic page shows one visitor: the state of their
// place or the outcome of their form, the figures, the forms' hidden
// values and when the page reloads itself. Pages render it
// (BasicRenderer); the zero value is a visitor who has not joined.
type BasicView struct {
	// State is the visitor's: one of admission's states; "" before
	// joining; Granted once a claim is granted (or replayed).
	State string
	// Position, Ahead and ETA are the place's, as the status poll says.
	Position, Ahead int64
	ETA             time.Duration
	// Refresh is when the page reloads itself; 0: it does not.
	Refresh time.Duration
	// CanJoin shows the join form.
	CanJoin bool
	// Form is the form token the forms carry; Idem the claim form's
	// idempotency key, new at every render.
	Form, Idem string
	// ExpiresAt is when the visitor's admission ends (admitted).
	ExpiresAt time.Time
	// ClaimID and ClaimStatus are the claim granted (Granted).
	ClaimID     string
	ClaimStatus claim.Status
	// Problem is the refusal shown, nil for none; its Status is the
	// page's.
	Problem *kit.Problem
}

// Granted is BasicView.State once the visitor's claim is granted.
const Granted = "granted"

// BasicRenderer writes the basic page of sale (nil: an unknown event) for
// view v as the answer of c, in the visitor's language; *pages.Pages.
type BasicRenderer interface {
	Basic(c *fiber.Ctx, sale *admission.Sale, v BasicView) error
}

// forms checks the basic page's form posts; *protect.Edge.
type forms interface {
	FormToken(ev, user string) string
	CheckForm(c *fiber.Ctx, ev, user string) error // the token from the form body only
}

// idemField is the claim form's idempotency key field; the form token's
// field (protect.FormField) is the Forms' to read.
const idemField = "idem"

// BasicPath is the address of event ev's basic page.
func BasicPath(ev string) string { return "/e/" + ev + "/basic" }

// MountBasic adds the basic page and its forms to app under
// /e/:id/basic: loadSale (kit.LoadSale) finds the sale, earlyBird
// refuses the forms before the pre-queue opens, and any error is answered
// as a page. It needs Deps.Basic and Deps.Forms.
func (s *API) MountBasic(app fiber.Router, loadSale, earlyBird fiber.Handler) {
	g := app.Group("/e/:id/basic", s.basicErrors, loadSale)
	g.Get("/", s.basicPage)
	g.Post("/join", earlyBird, s.open, s.basicJoin) // a closed room lets nobody in (door.go)
	g.Post("/claim", earlyBird, s.basicClaim)
	// A form's address opened by hand (a bookmark, a reload turned into
	// a GET) leads to the page.
	toPage := func(c *fiber.Ctx) error { return c.Redirect(BasicPath(kit.SaleOf(c).Config.ID), fiber.StatusSeeOther) }
	g.Get("/join", toPage)
	g.Get("/claim", toPage)
}

// basicErrors answers the errors of the basic page's routes as pages,
// with the status, Retry-After and problem of kit's error table.
func (s *API) basicErrors(c *fiber.Ctx) error {
	err := c.Next()
	if err == nil {
		return nil
	}
	p := kit.Settle(c, err, s.cfg.Log)
	sale, _ := kit.LoadedSale(c)
	v := BasicView{Problem: p}
	if p.RetryAfter > 0 {
		v.Refresh = time.Duration(p.RetryAfter) * time.Second
	}
	return s.deps.Basic.Basic(c, sale, v)
}

// basicPage renders the visitor's place: a status poll, answered as a
// page that reloads itself at the poll's pace.
func (s *API) basicPage(c *fiber.Ctx) error {
	sale := kit.SaleOf(c)
	cfg := &sale.Config
	now := s.clock.Request(c)
	if kit.RawTicket(c, cfg.ID) == "" {
		return s.basicLobby(c, sale, now)
	}
	t, err := s.deps.Guard.Poll(c, cfg, now) // early birds, the status limits, then the ticket
	if err != nil {
		if p, _ := kit.ToProblem(err); p.Status == fiber.StatusUnauthorized || p.Code == "not_open" {
			return s.basicLobby(c, sale, now) // no usable ticket: join (again)
		}
		return err
	}
	d, tok, a, err := s.decide(c, sale, t, now)
	if err != nil {
		return err
	}
	v := BasicView{State: string(d.State), Position: d.Position, Ahead: d.Ahead, ETA: d.ETA}
	switch d.State {
	case admission.Admitted:
		user, err := s.deps.Identity.User(c, false)
		if err != nil {
			return err
		}
		setAdmissionCookie(c, cfg.ID, tok, a.ExpiresAt)
		v.ExpiresAt = a.ExpiresAt
		v.Form, v.Idem = s.deps.Forms.FormToken(cfg.ID, user), newIdemKey()
		// Like the page's script, ask again shortly before the admission
		// ends, for a fresh one.
		v.Refresh = max(a.ExpiresAt.Sub(now)-30*time.Second, 5*time.Second)
	case admission.Prequeue, admission.Waiting, admission.Paused:
		v.Refresh = d.PollAfter
	case admission.Closed:
		if d.ByStaff { // the place is kept: look again at the poll's pace
			v.Refresh = d.PollAfter
		}
	}
	return s.deps.Basic.Basic(c, sale, v)
}

// basicLobby renders the page of a visitor who has not joined: the join
// form while joining is open (the visitor is named now, so the form token
// can be bound to them), else when the sale opens; while staff have the
// room closed, the closure (State Closed) and no form, which open
// (door.go) would refuse, looking again at the closure's Retry-After,
// at most every admission.MaxPoll.
func (s *API) basicLobby(c *fiber.Ctx, sale *admission.Sale, now time.Time) error {
	cfg := &sale.Config
	var v BasicView
	var closed *event.ClosedError
	if errors.As(cfg.CheckOpen(now), &closed) {
		v.State, v.Refresh = string(admission.Closed), min(closed.RetryAfter, admission.MaxPoll)
		return s.deps.Basic.Basic(c, sale, v)
	}
	switch cfg.PhaseAt(now, sale.SoldOut) {
	case event.Upcoming:
		v.Refresh = min(max(cfg.PrequeueOpensAt.Sub(now), admission.MinPoll), admission.MaxPoll)
		return s.deps.Basic.Basic(c, sale, v)
	case event.SoldOut, event.Closed:
		return s.deps.Basic.Basic(c, sale, v)
	}
	// A lottery registers until it starts; a queue takes joins until it
	// ends (the joiner refuses the rest: queue.ErrClosed).
	v.CanJoin = !cfg.IsSafetyNet() && (cfg.Mode != event.Lottery || now.Before(cfg.StartsAt))
	if v.CanJoin {
		user, _, err := s.joiner(c, cfg)
		if err != nil {
			return err
		}
		v.Form = s.deps.Forms.FormToken(cfg.ID, user)
	}
	return s.deps.Basic.Basic(c, sale, v)
}

// errBasicRoom refuses the basic page's join in a safety-net room, whose
// visitors are let in by its gate and its page's script.
var errBasicRoom = kit.NewProblem(fiber.StatusForbidden, "forbidden", "this room admits through its page's script; turn JavaScript on")

// basicJoin is the join form: join's defences and enqueue for the caller,
// then back to the page (303), which shows the place.
func (s *API) basicJoin(c *fiber.Ctx) error {
	sale := kit.SaleOf(c)
	cfg := &sale.Config
	now := s.now()
	user, claims, err := s.joiner(c, cfg)
	if err != nil {
		return err
	}
	if err := s.attested(c, cfg); err != nil { // an app-only sale refuses the basic page too (attest.go)
		return err
	}
	if err := s.deps.Forms.CheckForm(c, cfg.ID, user); err != nil {
		return err
	}
	if cfg.IsSafetyNet() {
		return errBasicRoom
	}
	v, err := s.ask(c, cfg, user, claims, now, door.Join) // who may come in (doorstep.go)
	if err != nil {
		return err
	}
	if err := s.deps.Guard.Join(c, challenged(cfg, v), user); err != nil { // invite, proof of work, rate limits, captcha
		if v, err = s.overBudget(c, cfg, user, claims, now, door.Join, err); err != nil { // a busy network (busynet.go)
			return err
		}
	}
	// A bypass queues here: the page shows a place, and a bypassed
	// client uses the JSON join.
	if v.Action == door.Sink {
		err = s.basicSink(c, sale, user, claims, now)
	} else {
		_, _, _, err = s.enqueue(c, sale, user, claims, now, v)
	}
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Redirect(BasicPath(cfg.ID), fiber.StatusSeeOther)
}

// basicClaim is the claim form: the admission cookie spent under the
// form's idempotency key, answered with the outcome's page (201 granted,
// 200 a replay of the same claim).
func (s *API) basicClaim(c *fiber.Ctx) error {
	sale := kit.SaleOf(c)
	cfg := &sale.Config
	user, err := s.deps.Identity.User(c, false)
	if err != nil {
		return err
	}
	if err := s.deps.Forms.CheckForm(c, cfg.ID, user); err != nil {
		return err
	}
	key := c.FormValue(idemField)
	if key == "" {
		return errNoIdem // the token's own key would make every render's form one claim
	}
	res, err := s.spend(c, cfg, c.Cookies(AdmissionCookie(cfg.ID)), key)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Status(fiber.StatusCreated)
	if res.Replay {
		c.Status(fiber.StatusOK)
	}
	return s.deps.Basic.Basic(c, sale, BasicView{State: Granted, ClaimID: res.ClaimID, ClaimStatus: res.Status})
}

// basicSink is the join form's sink: a sunk ticket in the caller's lane,
// as enqueue would put them (laneOf).
func (s *API) basicSink(c *fiber.Ctx, sale *admission.Sale, user string, claims map[string][]string, now time.Time) error {
	lane, err := s.laneOf(c, &sale.Config, user, claims, now)
	if err != nil {
		return err
	}
	_, _, _, err = s.sink(c, sale, user, lane, now)
	return err
}

var errNoIdem = kit.BadRequest("the claim form has no idempotency key; reload the page and claim again")

// newIdemKey returns a fresh idempotency key for one render of the claim
// form.
func newIdemKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "form-" + hex.EncodeToString(b[:])
}
