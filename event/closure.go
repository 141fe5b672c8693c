package event

import (
	"errors"
	"fmt"
	"time"
)

// Closure is staff closing the room: maintenance, or not accepting anyone
// (Cloudflare's "reject" mode). It is not a pause. A pause holds the
// queue: people keep joining and wait, and admission resumes where it
// stopped. A closed room turns everyone away:
//
//   - every way in — a join, the basic page's join form, a pass
//     redemption, a lane invite, a safety-net room's join or gate — is
//     refused (503 closed and a Retry-After: the seconds until Until, or
//     DefaultClosedRetry; the gate sends to the waiting page) and changes
//     nothing; each asks CheckOpen first;
//   - people already queued keep their ticket and their place: status
//     answers the state closed (no admission token), and after reopening
//     they carry on where they were;
//   - claims are refused with 503 closed, even with a valid admission
//     token (it stays valid until its own expiry);
//   - the gate sends every visitor, admitted or not, to the waiting page,
//     which shows Message (or the default text of the visitor's
//     language);
//   - the frontier does not move (admission.StepFor holds it), so nobody
//     is admitted, or counted a no-show, while the room is closed.
//
// Staff close and reopen a room with POST /admin/events/{id}/close and
// /reopen (or a PUT of the event with "closed", and "closed": null to
// reopen); a closure never locks and never ends by itself: Until is only
// announced. Pause and closure are independent: reopening leaves a pause
// as it was.
type Closure struct {
	// Message is shown to visitors instead of the default text of their
	// language, at most MaxClosedMessage bytes of plain text.
	//
	// Default: "" (the page's default text, in each language)
	Message string `json:"message,omitempty"`
	// Until is when staff expect to reopen: shown on the page and sent as
	// Retry-After. It does not reopen the room.
	//
	// Default: none (no announced end)
	Until *time.Time `json:"until,omitempty"`
}

// Closure limits.
const (
	// MaxClosedMessage bounds Closure.Message.
	MaxClosedMessage = 500
	// DefaultClosedRetry is the Retry-After of a refusal while closed
	// without an announced end, or past it.
	DefaultClosedRetry = time.Minute
)

// ErrClosed is matched (errors.Is) by the *ClosedError that CheckOpen
// returns: staff closed the room (503 closed).
var ErrClosed = errors.New("event: the room is closed")

// ClosedError is the refusal of anything while the room is closed; it
// carries the Retry-After.
type ClosedError struct {
	// RetryAfter is until Closure.Until, or DefaultClosedRetry.
	RetryAfter time.Duration
}

func (e *ClosedError) Error() string { return ErrClosed.Error() }

// Is makes errors.Is(err, ErrClosed) true.
func (e *ClosedError) Is(target error) bool { return target == ErrClosed }

// IsClosed reports whether staff closed the room.
func (c *Config) IsClosed() bool { return c.Closed != nil }

// CheckOpen returns nil unless staff closed the room, and then a
// *ClosedError (errors.Is ErrClosed) whose RetryAfter runs to the
// announced end at now, or DefaultClosedRetry. It is the one rule every
// way in asks before it changes anything (web/shopper's door.go: both
// joins, and so passes, lane invites and rooms; the gate; the basic
// lobby), and turnstile.Admit and Authorize ask it for every admission
// minted or spent; status answers closed instead (admission.DecidePlace).
func (c *Config) CheckOpen(now time.Time) error {
	if c.Closed == nil {
		return nil
	}
	retry := DefaultClosedRetry
	if u := c.Closed.Until; u != nil && u.After(now) {
		retry = u.Sub(now)
	}
	return &ClosedError{RetryAfter: retry}
}

// validateClosure checks the closure's message.
func (c *Config) validateClosure() error {
	if c.Closed == nil {
		return nil
	}
	if len(c.Closed.Message) > MaxClosedMessage {
		return fmt.Errorf("%w: closed.message is longer than %d bytes", ErrInvalid, MaxClosedMessage)
	}
	for _, r := range c.Closed.Message {
		if r < 0x20 && r != '\n' || r == 0x7f {
			return fmt.Errorf("%w: closed.message has a control character", ErrInvalid)
		}
	}
	if u := c.Closed.Until; u != nil && u.IsZero() {
		return fmt.Errorf("%w: closed.until must be a time, or left out", ErrInvalid)
	}
	return nil
}
