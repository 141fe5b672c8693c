package client

import (
	"strconv"
	"time"
)

// Code is a problem+json code of the node's error table (docs/api.md). The
// constants below are the codes callers branch on; match them with
// errors.Is, which compares an *Error's Code:
//
//	if errors.Is(err, client.ErrSoldOut) { ... }
//
// A Code is itself an error, so it can stand as the sentinel.
type Code string

// Error returns the code.
func (c Code) Error() string { return "anteroom: " + string(c) }

// The codes of the node's error table that callers branch on.
const (
	ErrBadRequest      Code = "bad_request"      // 400: malformed request
	ErrUnauthenticated Code = "unauthenticated"  // 401: missing, forged or expired ticket, token or identity
	ErrForbidden       Code = "forbidden"        // 403: token for another event or user
	ErrNotAdmitted     Code = "not_admitted"     // 403: not admitted yet
	ErrNotOpen         Code = "not_open"         // 403: the queue is not open yet
	ErrNotSelected     Code = "not_selected"     // 403: lost the lottery
	ErrPowRequired     Code = "pow_required"     // 403: the join needs a proof of work (X-PoW)
	ErrInviteRequired  Code = "invite_required"  // 403: the sale is invite-only
	ErrCaptchaRequired Code = "captcha_required" // 403: the join needs a captcha
	ErrUnknownEvent    Code = "unknown_event"    // 404: no such event
	ErrNotFound        Code = "not_found"        // 404: no such claim
	ErrLimitReached    Code = "limit_reached"    // 409: per-user limit; Error.ClaimIDs names the claims held
	ErrSignalLimit     Code = "signal_limit"     // 409: a device, payment, phone or address holds its allowed claims
	ErrBadSignal       Code = "bad_signal"       // 401: a shop-signed signal is malformed, forged, stale or another's
	ErrConflict        Code = "conflict"         // 409: e.g. releasing a confirmed claim
	ErrSoldOut         Code = "sold_out"         // 410: no stock left
	ErrRateLimited     Code = "rate_limited"     // 429: with Retry-After
	ErrPaused          Code = "paused"           // 503: the sale is paused; the admission stays valid
	ErrClosed          Code = "closed"           // 503: staff closed the room
	ErrDegraded        Code = "degraded"         // 503: a backing service is not answering
	ErrCaptchaFailed   Code = "captcha_failed"   // 403: the captcha was refused
	ErrInviteInvalid   Code = "invite_invalid"   // 403: the invite is forged, expired or someone else's
	ErrPassInvalid     Code = "pass_invalid"     // 403: the bypass pass is forged, expired or another event's
	ErrPassRevoked     Code = "pass_revoked"     // 403: the bypass pass was revoked
	ErrPassUsedUp      Code = "pass_used_up"     // 403: the bypass pass has been used as often as it may
	ErrTooLarge        Code = "too_large"        // 413: the request is too large
)

// Error is a refusal the node answered: its HTTP status and RFC 9457
// problem+json body, and the Retry-After header. A call that was retried
// returns the last answer's Error. errors.Is(err, code) matches Code.
type Error struct {
	// Op is the call: "join", "status", "claim", "claims", "release" or
	// "event".
	Op string
	// Status is the HTTP status.
	Status int
	// Code is the problem's code; "" when the body was not a problem
	// (an answer of a proxy in front of the node).
	Code Code
	// Title and Detail are the problem's texts, for people.
	Title, Detail string
	// RequestID is the node's request id, to quote when reporting.
	RequestID string
	// RetryAfter is the Retry-After header; 0 without one.
	RetryAfter time.Duration
	// ClaimIDs are the claims held, with ErrLimitReached.
	ClaimIDs []string
	// Attempts is how many times the call was sent.
	Attempts int
}

// Error describes the refusal.
func (e *Error) Error() string {
	s := "anteroom: " + e.Op + ": " + strconv.Itoa(e.Status)
	if e.Code != "" {
		s += " " + string(e.Code)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is reports whether target is the Code of e.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c != "" && c == e.Code
}

// Temporary reports whether the node asked to try again later (429 or
// 503, normally with Retry-After).
func (e *Error) Temporary() bool { return retryable(e.Status) }
