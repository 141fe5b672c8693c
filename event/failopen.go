package event

import (
	"errors"
	"fmt"
	"time"
)

// A fail-open is staff letting everyone through the gate for a while:
// when the room cannot answer as it should (its Redis is failing, a node
// is struggling) and the shop behind a gate must not be shut. It is a
// deadline, never a flag, so it ends by itself:
//
//   - while now is before FailOpenUntil, the gate (GET
//     /events/{id}/gate, nginx auth_request) answers 204 to every
//     visitor, admitted or not, with the header X-Anteroom-Fail-Open
//     naming the deadline, and asks nothing of Redis; at the deadline it
//     is the ordinary gate again, with no one acting;
//   - it never applies to claims: a claim still needs a valid admission
//     token of its caller, and a join, status and the waiting page are
//     what they were;
//   - a room staff closed stays closed: a closure is the more cautious
//     of two explicit staff acts.
//
// Staff set it with PUT /admin/events/{id}/fail-open {"until": ...,
// "confirm": <the event id>} (at most MaxFailOpen ahead, and in the
// future) and end it early with DELETE; both are audited. A PUT of the
// whole event keeps it as stored and refuses to change it: the
// confirmation cannot be skipped. It is stored in the event's
// configuration, which every node reads again each tick, so every gate
// sees it within one tick, and a node whose Redis then fails keeps the
// view it read (and so keeps failing open until the deadline).
//
// When anteroom itself cannot answer, the gateway decides: the nginx
// examples and the Cloudflare Worker take a deadline of their own
// (docs/operate.md, "When anteroom cannot answer").

// MaxFailOpen bounds how far ahead a fail-open's deadline may be.
const MaxFailOpen = 24 * time.Hour

// ErrFailOpen wraps every refused fail-open request: a deadline in the
// past or too far ahead, a missing or wrong confirmation, or a change of
// fail_open_until through a PUT of the whole event (400).
var ErrFailOpen = errors.New("event: fail-open refused")

// FailsOpen reports whether the gate lets everyone through at now:
// FailOpenUntil is set and now is before it.
func (c *Config) FailsOpen(now time.Time) bool {
	return c.FailOpenUntil != nil && now.Before(*c.FailOpenUntil)
}

// CheckFailOpen checks a request to fail open until until at now,
// confirmed with confirm, which must be the event's id.
func (c *Config) CheckFailOpen(until time.Time, confirm string, now time.Time) error {
	switch {
	case confirm == "":
		return fmt.Errorf("%w: confirm is required: the event id (%q), to say this lets everyone through the gate", ErrFailOpen, c.ID)
	case confirm != c.ID:
		return fmt.Errorf("%w: confirm must be the event id (%q)", ErrFailOpen, c.ID)
	case until.IsZero():
		return fmt.Errorf("%w: until is required (RFC 3339)", ErrFailOpen)
	case !until.After(now):
		return fmt.Errorf("%w: until must be in the future (now is %s)", ErrFailOpen, now.UTC().Format(time.RFC3339))
	case until.Sub(now) > MaxFailOpen:
		return fmt.Errorf("%w: until must be at most %s ahead", ErrFailOpen, MaxFailOpen)
	}
	return nil
}

// KeepFailOpen refuses a PUT of the whole event that changes
// fail_open_until (from old to next): only the fail-open routes set it.
func KeepFailOpen(old, next *Config) error {
	o, n := old.FailOpenUntil, next.FailOpenUntil
	if o == nil && n == nil || o != nil && n != nil && o.Equal(*n) {
		return nil
	}
	return fmt.Errorf("%w: fail_open_until is set with PUT /admin/events/{id}/fail-open (with a confirmation) and ended with DELETE, not with the event", ErrFailOpen)
}

// validateFailOpen checks the stored deadline's shape; how far ahead it
// may be is judged when it is set (CheckFailOpen), since a stored
// deadline only passes.
func (c *Config) validateFailOpen() error {
	if c.FailOpenUntil != nil && c.FailOpenUntil.IsZero() {
		return fmt.Errorf("%w: fail_open_until must be a time, or left out", ErrInvalid)
	}
	return nil
}
