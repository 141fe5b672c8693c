package turnstile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
)

// Kind is how an admission was obtained.
type Kind uint8

// The kinds of admission. Admit's switch says what each records.
const (
	// Queue: the frontier passed the holder's position, seen by a status
	// poll (position may be a lane's, queue.Laned).
	Queue Kind = iota + 1
	// Room: a safety-net room admitted the visitor at once (its join or
	// its gate) or renews their admission (the gate, past half its life).
	Room
	// Pass: a bypass pass was redeemed on join (position
	// admission.PassPosition).
	Pass
)

func (k Kind) String() string {
	switch k {
	case Queue:
		return "queue"
	case Room:
		return "room"
	case Pass:
		return "pass"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Entry is an admission to mint.
type Entry struct {
	Kind Kind
	// User is the holder, the token's sub.
	User string
	// Pos is the position admitted: the queue's (or a lane's, see
	// queue.Laned), the room's sequence number; ignored for a Pass,
	// which always holds admission.PassPosition.
	Pos int64
	// Waited is how long the holder waited for a Queue admission (since
	// their ticket was issued); the report tallies it. Ignored otherwise.
	Waited time.Duration
}

// ErrUncounted is Admit's error when a sale with max_active could not count
// the admission in Redis: the token is not handed out (retry in a moment).
var ErrUncounted = errors.New("turnstile: the admission could not be counted")

// Admit mints the admission token of e for sale cfg at now, valid for the
// sale's admission_ttl_seconds, and records what the kind calls for. It
// returns the signed token and its claims, or the issuer's error (nothing
// is then recorded), or ErrUncounted (wrapping Redis's error: the token
// must not be handed out). In a room staff closed it mints nothing, of
// any kind: the *event.ClosedError of cfg.CheckOpen, the rule every way
// in asks first (web/shopper's door.go), held here for every admission.
//
// What each kind records, and why they differ:
//
//	kind   counted at once        presence mark        checkout session       metric
//	Queue  under max_active       yes, with the wait   yes, under max_active  yes
//	Room   yes (max_active)       yes, wait unknown    no                     yes
//	Pass   no                     no                   no                     yes
//
// Each column in turn:
//
//   - Counted at once: under max_active a Queue or Room position is
//     counted active in Redis until the token's expiry before Admit
//     returns (View.Activate, one Redis round trip per token minted; a
//     room always has max_active). The presence mark below is kept in the
//     node's memory until its next tick: a node killed meanwhile would
//     lose it, the position would turn a no-show after the grace and its
//     place would go to someone else while this token, which cannot be
//     revoked, stays valid. The deadline is the token's own exp, so a
//     node whose clock runs ahead does not outlive Redis's count either.
//     Nothing is handed out when Redis cannot count it (ErrUncounted).
//     A Pass is outside max_active's count until it claims.
//
//   - Presence: a Queue or Room position is one of the frontier's; marking
//     it present keeps it from being skipped as a no-show and, under
//     max_active, counts it active until the token expires. A Queue
//     holder's wait is known from their ticket and goes to the report; a
//     Room admission is immediate (the room's join or gate) or a renewal,
//     with no wait to tally. A Pass holds no frontier position
//     (admission.PassPosition is in no lane): it takes no one's place and
//     holds none.
//
//   - Checkout session: under max_active the shop may end a checkout early
//     by the token's jti (POST /events/{id}/sessions/{jti}/finished),
//     freeing the place for the next person. Only the default lane's
//     positions can be finished (sale.Snapshots.Session drops the
//     others). A Room admission's turn ends by its own clock instead: the
//     gate renews it while the visitor keeps using the site and it lapses
//     when they stop; a finished session would leave a visitor whom the
//     gate keeps renewing admitted but no longer counted, so none is
//     recorded. (A room visitor who waited in the room's queue is admitted
//     by the status poll as a Queue admission and is recorded like a
//     sale's: kept as it was, an open question for the room's owners.) A
//     Pass is outside max_active's count until it claims; its pending
//     claim then counts, by user, in advance.lua.
//
//   - Metric: every admission token this node signs is counted, whatever
//     its kind (anteroom_admission_tokens_issued_total). Before this
//     package a Pass was not counted: a bug, fixed with
//     TestOpsMetricsCountPassTokens.
func (t *Turnstile) Admit(ctx context.Context, cfg *event.Config, e Entry, now time.Time) (string, tokens.Admission, error) {
	if err := cfg.CheckOpen(now); err != nil {
		return "", tokens.Admission{}, err // staff closed the room: no kind admits
	}
	switch e.Kind {
	case Queue, Room:
	case Pass:
		e.Pos = admission.PassPosition
	default:
		return "", tokens.Admission{}, fmt.Errorf("turnstile: admit %v", e.Kind)
	}
	tok, a, err := t.issuer.Issue(cfg.ID, e.User, e.Pos, TTL(cfg), now)
	if err != nil {
		return "", tokens.Admission{}, err
	}
	if e.Kind != Pass && cfg.MaxActive > 0 {
		if err := t.view.Activate(ctx, cfg.ID, e.Pos, a.ExpiresAt); err != nil {
			return "", tokens.Admission{}, fmt.Errorf("%w: %w", ErrUncounted, err)
		}
	}
	switch e.Kind {
	case Queue:
		t.view.PresentAfter(cfg.ID, e.Pos, e.Waited)
		if cfg.MaxActive > 0 {
			t.view.Session(cfg.ID, a.ID, e.Pos)
		}
	case Room:
		t.view.PresentAfter(cfg.ID, e.Pos, -1)
	case Pass: // no frontier position: nothing to mark
	}
	t.issued(cfg.ID)
	return tok, a, nil
}

// TTL is how long an admission to sale cfg lasts.
func TTL(cfg *event.Config) time.Duration {
	return time.Duration(cfg.AdmissionTTLSeconds) * time.Second
}
