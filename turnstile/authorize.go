package turnstile

import (
	"errors"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/tokens"
)

// Authorize's refusals beside the issuer's (tokens.ErrInvalid, 401, and
// tokens.ErrWrongEvent, 403).
var (
	// ErrNotForSale: the event is a safety-net room, which sells nothing
	// (403).
	ErrNotForSale = errors.New("turnstile: a safety-net room sells nothing")
	// ErrNoToken: the request carries no admission token (401).
	ErrNoToken = errors.New("turnstile: no admission token")
	// ErrOtherUser: the token's subject is not the caller (403).
	ErrOtherUser = errors.New("turnstile: the admission token belongs to another user")
	// ErrPaused: the sale is paused; the admission stays valid (503).
	ErrPaused = errors.New("turnstile: the sale is paused")
)

// Caller names the user making the request (the node's identity mode). Its
// error is returned as is.
type Caller func() (string, error)

// Authorize decides whether the caller may spend admission token raw on a
// claim in sale cfg at now, checking in this order (the first refusal
// wins, so a forged token is never told about the identity):
//
//  1. the sale sells: ErrNotForSale for a safety-net room;
//  2. a token was presented: ErrNoToken for raw "";
//  3. signature, algorithm, issuer, audience, lifetime and event, by the
//     issuer: errors wrapping tokens.ErrInvalid or tokens.ErrWrongEvent;
//  4. the caller is the token's subject: caller's own error when it names
//     nobody, ErrOtherUser for someone else;
//  5. staff have not closed the room: an *event.ClosedError (errors.Is
//     event.ErrClosed, 503 closed; the admission stays valid);
//  6. the sale is not paused: ErrPaused.
//
// It returns the token's claims; the claim script then holds the per-user
// limit and the stock (see the package comment). Nothing is recorded:
// call Spent once the claim is granted.
func (t *Turnstile) Authorize(cfg *event.Config, raw string, caller Caller, now time.Time) (tokens.Admission, error) {
	if cfg.IsSafetyNet() {
		return tokens.Admission{}, ErrNotForSale
	}
	if raw == "" {
		return tokens.Admission{}, ErrNoToken
	}
	a, err := t.issuer.Verify(raw, cfg.ID, now)
	if err != nil {
		return tokens.Admission{}, err
	}
	user, err := caller()
	if err != nil {
		return tokens.Admission{}, err
	}
	if user != a.User {
		return tokens.Admission{}, ErrOtherUser
	}
	if err := cfg.CheckOpen(now); err != nil {
		return tokens.Admission{}, err
	}
	if cfg.Paused {
		return tokens.Admission{}, ErrPaused
	}
	return a, nil
}

// Spent records that admission a was used for a granted claim at now: its
// position's hold on max_active ends (the pending claim holds it instead,
// by user), and the report tallies the time from token to claim. A Pass's
// position is no frontier's and is not recorded.
func (t *Turnstile) Spent(a tokens.Admission, now time.Time) {
	t.view.ClaimedAfter(a.Event, a.Pos, now.Sub(a.IssuedAt))
}
