package shopper

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	mathrand "math/rand/v2"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
	"github.com/anteroom/anteroom/web/kit"
	"github.com/gofiber/fiber/v2"
)

// rooms admits to safety-net rooms; *admission.Frontier.
type rooms interface {
	Enter(ctx context.Context, ev string, e admission.Entrance) (admission.Entered, error)
}

// roomJoinJSON is a safety-net join answer: a join answer, with the
// admission token when the caller was admitted at once.
type roomJoinJSON struct {
	joinJSON
	AdmissionToken string     `json:"admission_token,omitempty"`
	ExpiresAt      *time.Time `json:"admission_expires_at,omitempty"`
}

// entrance is the safety-net step for cfg: user "" for the gate.
func entrance(cfg *event.Config, user string, admitOnly bool) admission.Entrance {
	return admission.Entrance{
		User: user, Opens: cfg.StartsAt, Ends: cfg.EndsAt, Rate: cfg.AdmitRatePerSecond,
		MaxActive: cfg.MaxActive, AdmissionTTL: turnstile.TTL(cfg), Paused: cfg.Paused, AdmitOnly: admitOnly,
		NoShowGrace: time.Duration(cfg.NoShowGraceSeconds) * time.Second,
	}
}

// joinRoom is join for a safety-net room: one Redis step that admits at
// once while the room is under its thresholds (the answer then carries the
// admission token and sets the admission cookie) and queues otherwise.
// The door's verdict v (at door.Room) names the eligibility lists its
// node filter could not tell: the step decides them exactly (roomLists)
// inside the entrance's script call, the Redis call a room's join makes
// anyway (no round trip is added), and refuses a caller on none of them
// 403 not_eligible with nothing written.
func (s *API) joinRoom(c *fiber.Ctx, sale *admission.Sale, user string, v door.Verdict) error {
	cfg := &sale.Config
	if s.deps.Rooms == nil {
		return kit.RetryLater("degraded", "safety-net rooms are not available on this node", 5)
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	e := entrance(cfg, user, false)
	e.Lists = s.roomLists(cfg, user, v)
	en, err := s.deps.Rooms.Enter(ctx, cfg.ID, e)
	if err != nil {
		return doorErr(cfg, err)
	}
	ticket, err := s.giveTicket(c, cfg, user, en.Seq, en.JoinedAt)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	now := s.now()
	out := roomJoinJSON{joinJSON: joinJSON{Ticket: ticket, Seq: en.Seq}}
	pos := en.Seq
	out.Position = &pos
	if en.Admitted {
		tok, exp, err := s.admitTo(c, cfg, user, en.Seq, now)
		if err != nil {
			return err
		}
		out.State, out.PollAfterMs, out.AdmissionToken, out.ExpiresAt = admission.Admitted, pollMillis(admission.MaxPoll), tok, &exp
		return c.JSON(out)
	}
	d := admission.DecidePlace(sale, queue.Place{Seq: en.Seq, Joined: en.JoinedAt}, now, mathrand.Float64)
	return roomWaiting(c, ticket, en.Seq, d)
}

// roomLists are the copies of v's exact lists in room cfg's slot (a room
// has one: event validation keeps its join_shards at 1) and user's keyed
// hash: the entrance script's check. At door.Room only eligibility lists
// are left to it (a block list's "maybe" refused already).
func (s *API) roomLists(cfg *event.Config, user string, v door.Verdict) queue.Lists {
	if v.Exact.Empty() || user == "" {
		return queue.Lists{}
	}
	tag := queue.LaneTag(cfg.ID, 0)
	l := queue.Lists{Hash: lists.Arg(s.deps.Door.Hash(user))}
	for _, name := range v.Exact.Block {
		l.Block = append(l.Block, lists.CopyKey(tag, name))
	}
	for _, name := range v.Exact.Eligible {
		l.Eligible = append(l.Eligible, lists.CopyKey(tag, name))
	}
	return l
}

// roomWaiting answers a room's join that waits, with ticket for number
// seq (the room's position) and decision d: the one shape of a real and a
// sunk room join (sinkJoin).
func roomWaiting(c *fiber.Ctx, ticket string, seq int64, d admission.Decision) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	out := roomJoinJSON{joinJSON: joinJSON{Ticket: ticket, Seq: seq}}
	pos := seq
	out.Position = &pos
	if d.State == admission.Admitted {
		// The view is older than this step, which found the entry waiting.
		d.State, d.PollAfter = admission.Waiting, admission.MinPoll
	}
	out.State, out.PollAfterMs = d.State, pollMillis(d.PollAfter)
	return c.JSON(out)
}

// bypassJoinJSON answers a join a door rule bypasses.
type bypassJoinJSON struct {
	State          admission.State `json:"state"`
	Position       *int64          `json:"position"`
	AdmissionToken string          `json:"admission_token"`
	ExpiresAt      time.Time       `json:"admission_expires_at"`
}

// bypassJoin admits user at once, without a place, as a bypass pass does
// (turnstile.Pass: not counted under max_active, no presence; the claim
// still holds the stock and the per-user limit): a join a door rule
// bypasses, to a sale or a safety-net room.
func (s *API) bypassJoin(c *fiber.Ctx, cfg *event.Config, user string, now time.Time) error {
	ctx, cancel := s.ctx(c)
	defer cancel()
	tok, a, err := s.deps.Turnstile.Admit(ctx, cfg, turnstile.Entry{Kind: turnstile.Pass, User: user}, now)
	if err != nil {
		return err
	}
	exp := a.ExpiresAt.UTC()
	setAdmissionCookie(c, cfg.ID, tok, exp)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(bypassJoinJSON{State: admission.Admitted, AdmissionToken: tok, ExpiresAt: exp})
}

// admitTo admits user (at position pos) to cfg's room (turnstile.Room:
// the position is marked present, and so active until the token expires)
// and sets the admission cookie.
func (s *API) admitTo(c *fiber.Ctx, cfg *event.Config, user string, pos int64, now time.Time) (string, time.Time, error) {
	ctx, cancel := s.ctx(c)
	defer cancel()
	tok, a, err := s.deps.Turnstile.Admit(ctx, cfg, turnstile.Entry{Kind: turnstile.Room, User: user, Pos: pos}, now)
	if err != nil {
		return "", time.Time{}, err
	}
	exp := a.ExpiresAt.UTC()
	setAdmissionCookie(c, cfg.ID, tok, exp)
	return tok, exp, nil
}

// gateRenew, in a safety-net room, renews a visitor's admission once half
// of it has passed (a new token in the admission cookie, the position
// active for another TTL): people who keep using the site stay admitted,
// and those who stop leave when their admission expires. One Redis call:
// the renewal is counted until its expiry before it goes out
// (turnstile.Admit); the next tick records the presence.
func (s *API) gateRenew(c *fiber.Ctx, cfg *event.Config, a tokens.Admission, now time.Time) {
	if !cfg.IsSafetyNet() || a.ExpiresAt.Sub(now) > turnstile.TTL(cfg)/2 {
		return
	}
	// A failed renewal leaves the current admission, still valid.
	_, _, _ = s.admitTo(c, cfg, a.User, a.Pos, now)
}

// gateEnter, in a safety-net room, tries to admit a visitor without an
// admission at once, from the gate (admit only: a visitor who cannot be
// admitted now is sent to the waiting page, which joins the queue). It
// reports whether the visitor was admitted; the answer then carries the
// admission cookie and names the user. The visitor is the one the identity
// mode names without minting (the visitor cookie, a user token); anyone
// else gets a one-time id, since a gate answer passes on one cookie only.
// The join's edge protection (per-IP budget and the other join limits)
// applies. v is the door's verdict for the gate's caller at door.Room
// (gate): the eligibility lists its filter could not tell ride the
// entrance's script call as at a room's join (roomLists), and a caller
// on none of them is refused 403 not_eligible. It names them by the
// user the door saw; one the identity does not name is on no list of
// ids, so an eligibility list of ids refused them already.
//
// An entrance or admission that fails for another reason than a full room
// (Redis down or failing) is errRoomUnavailable: the gate answers 503, so
// a gateway can tell the room cannot answer (and fail open until its
// deadline, docs/operate.md) rather than send the visitor to a waiting
// page that cannot take their join either.
func (s *API) gateEnter(c *fiber.Ctx, sale *admission.Sale, v door.Verdict, now time.Time) (bool, error) {
	cfg := &sale.Config
	if !cfg.IsSafetyNet() || s.deps.Rooms == nil || cfg.Paused || sale.Joined > int64(sale.Frontier) {
		return false, nil // somebody is waiting (as of this node's view): queue behind them
	}
	user, err := s.deps.Identity.User(c, false)
	if err != nil {
		if user, err = oneTimeVisitor(); err != nil {
			return false, nil
		}
	}
	if s.deps.Guard.Join(c, cfg, user) != nil {
		return false, nil
	}
	ctx, cancel := s.ctx(c)
	defer cancel()
	e := entrance(cfg, "", true)
	e.Lists = s.roomLists(cfg, user, v)
	en, err := s.deps.Rooms.Enter(ctx, cfg.ID, e)
	switch {
	case errors.Is(err, admission.ErrFull):
		return false, nil
	case errors.Is(err, queue.ErrBlocked), errors.Is(err, queue.ErrNotEligible):
		return false, doorErr(cfg, err)
	}
	if err != nil {
		s.cfg.Log.Warn("safety-net gate", "event", cfg.ID, "err", err)
		return false, errRoomUnavailable
	}
	if _, _, err := s.admitTo(c, cfg, user, en.Seq, now); err != nil {
		s.cfg.Log.Warn("safety-net gate: issue", "event", cfg.ID, "err", err)
		if errors.Is(err, event.ErrClosed) {
			return false, nil
		}
		return false, errRoomUnavailable
	}
	c.Set(GateUserHeader, user)
	return true, nil
}

// errRoomUnavailable is the gate's answer when a safety-net room cannot
// take a visitor for another reason than being full: 503 degraded.
var errRoomUnavailable = kit.RetryLater("degraded", "the room cannot admit right now", 5)

// oneTimeVisitor returns a random visitor id ("g-" and 22 base64url
// characters) for a gate visitor the identity mode does not name.
func oneTimeVisitor() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "g-" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}
