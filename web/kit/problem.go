package kit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/attest/appattest"
	"github.com/anteroom/anteroom/attest/device"
	"github.com/anteroom/anteroom/attest/playintegrity"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/door/lists"
	"github.com/anteroom/anteroom/door/rules"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/netguard"
	"github.com/anteroom/anteroom/internal/salefile"
	"github.com/anteroom/anteroom/lifecycle"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/push"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/report"
	"github.com/anteroom/anteroom/staff"
	"github.com/anteroom/anteroom/tokens"
	"github.com/anteroom/anteroom/turnstile"
	"github.com/gofiber/fiber/v2"
)

// Problem is an RFC 9457 problem detail with anteroom's extra fields. A
// handler returns one as an error to answer with it.
type Problem struct {
	Type       string   `json:"type"`
	Title      string   `json:"title"`
	Status     int      `json:"status"`
	Code       string   `json:"code"`
	Detail     string   `json:"detail,omitempty"`
	Instance   string   `json:"instance,omitempty"`
	RequestID  string   `json:"request_id,omitempty"`
	ClaimIDs   []string `json:"claim_ids,omitempty"`
	RetryAfter int      `json:"retry_after_seconds,omitempty"`
	// Line is the line of a page template a bad_template problem is on,
	// of a list upload a bad_request problem names, or of the `when` of
	// the rule an invalid_rule problem names.
	Line int `json:"line,omitempty"`
	// Rule and Column name the door rule an invalid_rule problem refuses
	// and the column of its `when` the fault is at (0: the whole rule),
	// for the console to point at.
	Rule   string `json:"rule,omitempty"`
	Column int    `json:"column,omitempty"`
	// Signal names the signal (device, payment, phone, address) whose
	// limit a signal_limit problem refuses the claim by.
	Signal string `json:"signal,omitempty"`
}

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// NewProblem builds a Problem; detail is shown to the client, so it must never
// carry internal error text.
func NewProblem(status int, code, detail string) *Problem {
	return &Problem{Type: "https://anteroom.dev/problems/" + code, Title: titleOf(code), Status: status, Code: code, Detail: detail}
}

// titles are the problems' titles by code; any other code is titled
// "Internal error".
var titles = map[string]string{
	"bad_request":         "Bad request",
	"blocked":             "Not allowed",
	"not_eligible":        "Not allowed",
	"bad_template":        "Bad page template",
	"unauthenticated":     "Authentication required",
	"forbidden":           "Not allowed",
	"not_admitted":        "Not allowed",
	"not_open":            "Not allowed",
	"not_selected":        "Not allowed",
	"invite_required":     "Not allowed",
	"pow_required":        "Not allowed",
	"captcha_required":    "Not allowed",
	"captcha_failed":      "Not allowed",
	"invite_invalid":      "Not allowed",
	"pass_invalid":        "Not allowed",
	"pass_revoked":        "Not allowed",
	"pass_used_up":        "Not allowed",
	"untrusted_signal":    "Not allowed",
	"bad_signal":          "Authentication required",
	"unknown_event":       "Not found",
	"not_found":           "Not found",
	"unknown_session":     "Not found",
	"limit_reached":       "Limit reached",
	"signal_limit":        "Limit reached",
	"sold_out":            "Sold out",
	"rate_limited":        "Too many requests",
	"paused":              "Paused",
	"closed":              "Closed",
	"degraded":            "Temporarily unavailable",
	"stock_not_laid":      "Temporarily unavailable",
	"not_replicated":      "Temporarily unavailable",
	"attestation_failed":  "Forbidden",
	"captcha_unavailable": "Temporarily unavailable",
	"conflict":            "Conflict",
	"not_cancellable":     "Conflict",
	"locked":              "Conflict",
	"not_configured":      "Conflict",
	"needs_rebuild":       "Conflict",
	"too_large":           "Request body too large",
	"invalid_rule":        "Bad door rule",
	"no_list":             "Not found",
	"exists":              "Conflict",
	"in_use":              "Conflict",
}

// Codes are every problem code kit knows: those of its error table and
// those it titles, sorted. The HTTP contract's ErrorCode enum lists them
// all (web/openapi's TestOpenAPIErrorCodes).
func Codes() []string {
	set := map[string]bool{}
	for _, r := range errorRows {
		set[r.code] = true
	}
	for code := range titles {
		set[code] = true
	}
	out := make([]string, 0, len(set))
	for code := range set {
		out = append(out, code)
	}
	slices.Sort(out)
	return out
}

func titleOf(code string) string {
	if t, ok := titles[code]; ok {
		return t
	}
	return "Internal error"
}

// Common problems.
var (
	// ErrUnknownEvent: no such event (404).
	ErrUnknownEvent = NewProblem(fiber.StatusNotFound, "unknown_event", "no such event")
	// ErrNoToken: no credentials where some are needed (401).
	ErrNoToken = NewProblem(fiber.StatusUnauthorized, "unauthenticated", "missing or malformed credentials")
)

// BadRequest is a 400 bad_request problem with a formatted detail.
func BadRequest(format string, a ...any) *Problem {
	return NewProblem(fiber.StatusBadRequest, "bad_request", fmt.Sprintf(format, a...))
}

// RetryLater is a 503 problem of code that asks the client to retry
// after seconds.
func RetryLater(code, detail string, seconds int) *Problem {
	p := NewProblem(fiber.StatusServiceUnavailable, code, detail)
	p.RetryAfter = seconds
	return p
}

// RateLimited is the 429 answer; what names the exhausted budget, retry
// how long until it has room again.
func RateLimited(what string, retry time.Duration) *Problem {
	p := NewProblem(fiber.StatusTooManyRequests, "rate_limited", "too many "+what+"; retry after Retry-After seconds")
	p.RetryAfter = Seconds(retry)
	return p
}

// Seconds rounds d up to whole seconds, at least 1, for Retry-After.
func Seconds(d time.Duration) int {
	return int(max(math.Ceil(d.Seconds()), 1))
}

// errorRow maps the errors it matches to one problem.
type errorRow struct {
	// err is matched with errors.Is; match, when set, instead.
	err   error
	match func(error) bool
	// status, code and detail are the problem's; detail is shown to the
	// client, so it is the row's own text, never the error's — except
	// with ownText, for errors written for staff (an invalid event
	// configuration says what is wrong with it).
	status  int
	code    string
	detail  string
	ownText bool
	// retry is the Retry-After in seconds.
	retry int
	// fill adds what the error carries (the claims a limit error holds).
	fill func(p *Problem, err error)
	// internal rows answer 500 and the error is logged: errors that must
	// never reach a handler, and anything no row knows.
	internal bool
}

// Text shared by several rows; RetrySameKey also by handlers that answer
// for a backing service themselves.
const (
	limitHeld     = "you already hold your allowed claims"
	passInvalid   = "this pass is not valid for this sale, or has expired"
	blockedDetail = "you may not enter this sale"
	RetrySameKey  = "a backing service is not answering; retry with the same Idempotency-Key"
	internalError = "something went wrong; quote the request id when reporting it"
)

// errorRows is the one map from errors to HTTP. ToProblem walks it in
// order and the first matching row wins, so an error that wraps another
// sentinel has its row before that sentinel's (each such row says so).
// TestEverySentinelMapped requires a row for every exported Err* of the
// module.
var errorRows = []errorRow{
	// The claim.
	{match: isLimitError, status: fiber.StatusConflict, code: "limit_reached", detail: limitHeld, fill: heldClaims},
	{err: claim.ErrLimitReached, status: fiber.StatusConflict, code: "limit_reached", detail: limitHeld},
	// A device, payment, phone or address shared with claims that hold
	// its allowed number already (claim.SignalLimitError names it).
	{err: claim.ErrSignalLimit, status: fiber.StatusConflict, code: "signal_limit", fill: signalNamed,
		detail: "the claims this sale allows per device, payment, phone or address are taken for one of yours"},
	// A failover, a slot migration or lost data: the stock on this Redis
	// may be stale until an operator rebuilds it (POST
	// /admin/events/{id}/rebuild). It wraps ErrPaused: first.
	{err: claim.ErrNeedsRebuild, status: fiber.StatusServiceUnavailable, code: "paused", retry: 5,
		detail: "claims wait for the stock to be rebuilt after a change of Redis server (failover, slot migration or lost data); retry with the same Idempotency-Key"},
	// A rebuild froze the stock (or replaced the stock a grant was decided
	// on, ErrSuperseded, which wraps it): the same request succeeds after it.
	{err: claim.ErrPaused, status: fiber.StatusServiceUnavailable, code: "paused", retry: 5, detail: "the sale is paused; retry with the same Idempotency-Key"},
	{err: claim.ErrSoldOut, status: fiber.StatusGone, code: "sold_out", detail: "no stock left"},
	{err: claim.ErrNotFound, status: fiber.StatusNotFound, code: "not_found", detail: "no such claim"},
	{err: claim.ErrUnavailable, status: fiber.StatusServiceUnavailable, code: "degraded", retry: 1, detail: "the order stream is not answering; retry with the same Idempotency-Key"},
	{err: claim.ErrConfirmed, status: fiber.StatusConflict, code: "conflict", detail: "a confirmed claim cannot be released"},
	{err: claim.ErrCancelled, status: fiber.StatusConflict, code: "conflict", detail: "a cancelled claim cannot be released"},
	// A cancellation: a claim that is unknown, released or cancelled
	// refuses it whole (claim.CancelError names them in claim_ids).
	{err: claim.ErrNotCancellable, status: fiber.StatusConflict, code: "not_cancellable", fill: cancelRefused,
		detail: "a claim named is unknown, released or cancelled already: nothing was cancelled"},
	{err: claim.ErrBadCancellation, status: fiber.StatusBadRequest, code: "bad_request",
		detail: "a cancellation needs 1 to 1000 claim ids and a reason of 1 to 200 characters without control characters"},
	{err: claim.ErrHoldLost, status: fiber.StatusServiceUnavailable, code: "stock_not_laid", retry: 5,
		detail: "the change was saved but its stock could not be laid; save again, or rebuild the stock from the saved configuration"},
	{err: claim.ErrRebuildRunning, status: fiber.StatusConflict, code: "conflict", detail: "a rebuild of this event is already running"},
	{err: limit.ErrTaken, status: fiber.StatusConflict, code: "limit_reached", detail: "this device or payment method has already been used by another account in this sale"},

	// Web Push subscriptions. ErrWrongEvent wraps tokens.ErrWrongEvent:
	// before it.
	{err: push.ErrWrongEvent, status: fiber.StatusBadRequest, code: "bad_request", detail: "the ticket is for another event: a push subscription is kept only for its ticket's event"},
	{err: push.ErrTooLarge, status: fiber.StatusBadRequest, code: "bad_request", ownText: true},
	{err: push.ErrInvalid, status: fiber.StatusBadRequest, code: "bad_request", ownText: true},
	{err: push.ErrDisabled, status: fiber.StatusNotFound, code: "not_found", detail: "Web Push is not enabled on this node"},

	// Spending an admission (turnstile.Authorize) and the tokens.
	{err: turnstile.ErrNotForSale, status: fiber.StatusForbidden, code: "forbidden", detail: "this event is a safety-net room: it sells nothing"},
	{err: turnstile.ErrNoToken, status: fiber.StatusUnauthorized, code: "unauthenticated", detail: ErrNoToken.Detail},
	{err: turnstile.ErrOtherUser, status: fiber.StatusForbidden, code: "forbidden", detail: "the admission token belongs to another user"},
	{err: turnstile.ErrPaused, status: fiber.StatusServiceUnavailable, code: "paused", retry: 5, detail: "the sale is paused; your admission stays valid"},
	// Before tokens.ErrInvalid, which they wrap.
	{err: tokens.ErrPassInvalid, status: fiber.StatusForbidden, code: "pass_invalid", detail: passInvalid},
	{err: tokens.ErrInviteInvalid, status: fiber.StatusForbidden, code: "invite_invalid", detail: "this invite is not for this sale and account, or has expired"},
	{err: tokens.ErrWrongEvent, status: fiber.StatusForbidden, code: "forbidden", detail: "the token is for another event"},
	{err: tokens.ErrInvalid, status: fiber.StatusUnauthorized, code: "unauthenticated", detail: "the token is invalid or expired"},

	// Admission: checkout sessions and bypass passes.
	{err: admission.ErrUnknownSession, status: fiber.StatusNotFound, code: "unknown_session",
		detail: "no admission token with this jti was issued for this sale (sessions are kept only for sales with max_active, from about a tick after the token is issued until 10 minutes after it expires)"},
	{err: admission.ErrPassUnknown, status: fiber.StatusNotFound, code: "not_found", detail: "no such pass"},
	{err: admission.ErrPassExists, status: fiber.StatusConflict, code: "conflict", detail: "pass id taken; mint again"},
	{err: admission.ErrPassRevoked, status: fiber.StatusForbidden, code: "pass_revoked", detail: "this pass was revoked"},
	{err: admission.ErrPassUsedUp, status: fiber.StatusForbidden, code: "pass_used_up", detail: "this pass has been used as often as it may"},

	// Staff.
	{err: staff.ErrNotFound, status: fiber.StatusNotFound, code: "not_found", detail: "no such account or API key"},
	{err: staff.ErrExists, status: fiber.StatusConflict, code: "conflict", detail: "an account of that name exists"},
	{err: staff.ErrLastAdmin, status: fiber.StatusConflict, code: "conflict", detail: "the last admin account cannot be removed or demoted"},
	{err: staff.ErrBadLogin, status: fiber.StatusUnauthorized, code: "unauthenticated", detail: "wrong name, password or key"},
	{err: staff.ErrStale, status: fiber.StatusUnauthorized, code: "unauthenticated", detail: "the account changed since this session signed in; sign in again"},
	{err: staff.ErrLinkSpent, status: fiber.StatusUnauthorized, code: "unauthenticated", detail: "this sign-in link was used already, has expired or is unknown: each link signs in once, within minutes; use the newest one the demo printed"},

	// The door (package door): a refusal says nothing beyond its code,
	// but a sale's own not-eligible message. The join script's exact
	// check answers queue's two, which the join turns into the door's.
	{match: isNotEligible, status: fiber.StatusForbidden, code: "not_eligible", detail: event.DefaultNotEligibleMessage, fill: notEligibleMessage},
	{err: door.ErrNotEligible, status: fiber.StatusForbidden, code: "not_eligible", detail: event.DefaultNotEligibleMessage},
	{err: door.ErrBlocked, status: fiber.StatusForbidden, code: "blocked", detail: blockedDetail},
	{err: queue.ErrBlocked, status: fiber.StatusForbidden, code: "blocked", detail: blockedDetail},
	{err: queue.ErrNotEligible, status: fiber.StatusForbidden, code: "not_eligible", detail: event.DefaultNotEligibleMessage},

	// The queue, the view and the events.
	{err: report.ErrNotInView, status: fiber.StatusServiceUnavailable, code: "degraded", retry: 1, detail: "this node has not read the event yet; retry in a moment"},
	{err: queue.ErrNotOpen, status: fiber.StatusForbidden, code: "not_open", detail: "the queue is not open yet"},
	{err: queue.ErrClosed, status: fiber.StatusForbidden, code: "forbidden", detail: "joining has ended"},
	{err: queue.ErrStaleView, status: fiber.StatusServiceUnavailable, code: "degraded", retry: 1, detail: "this node's view of the sale is out of date; retry in a moment"},
	// An admission under max_active Redis could not count: no token went
	// out (the node logs Redis trouble from its ticks).
	{err: turnstile.ErrUncounted, status: fiber.StatusServiceUnavailable, code: "degraded", retry: 1, detail: "the admission could not be recorded; retry in a moment"},
	// Staff closed the room (event.Closure): joins, claims and pass
	// redemptions wait for them to reopen it.
	{err: event.ErrClosed, status: fiber.StatusServiceUnavailable, code: "closed", retry: int(event.DefaultClosedRetry / time.Second),
		detail: "the room is closed for now; staff will reopen it", fill: closedRetry},
	{err: event.ErrNotFound, status: fiber.StatusNotFound, code: "unknown_event", detail: ErrUnknownEvent.Detail},
	{err: event.ErrInvalid, status: fiber.StatusBadRequest, code: "bad_request", ownText: true},
	{err: event.ErrFailOpen, status: fiber.StatusBadRequest, code: "bad_request", ownText: true},
	// A door rule that does not compile: the detail names the rule, the
	// line and the column (rules.RuleError), written for staff.
	{err: rules.ErrInvalidRule, status: fiber.StatusBadRequest, code: "invalid_rule", ownText: true, fill: ruleAt},
	// claim.ErrLockReached and claim.ErrHeld wrap these two.
	{err: event.ErrLocked, status: fiber.StatusConflict, code: "locked", ownText: true},
	{err: event.ErrConflict, status: fiber.StatusConflict, code: "conflict", detail: "the event changed concurrently; read it again and retry"},
	// Saved on the primary, not yet on its replicas: staff send it again.
	{err: event.ErrNotReplicated, status: fiber.StatusServiceUnavailable, code: "not_replicated", retry: 1,
		detail: "saved on the Redis primary, but its replicas did not copy it in time, so a Redis failover now would lose it; send the same change again"},

	// Device attestation (packages attest/...): a failed or replayed one
	// tells a client no more than the code; a stale one asks for another.
	{err: playintegrity.ErrStale, status: fiber.StatusForbidden, code: "attestation_failed", detail: "the device attestation is too old: ask for a fresh one"},
	{err: playintegrity.ErrAttestation, status: fiber.StatusForbidden, code: "attestation_failed", detail: "the device attestation failed"},
	{err: playintegrity.ErrMalformed, status: fiber.StatusBadRequest, code: "bad_request", detail: "malformed integrity token"},
	{err: appattest.ErrReplay, status: fiber.StatusForbidden, code: "attestation_failed", detail: "the device attestation failed"},
	{err: appattest.ErrAttestation, status: fiber.StatusForbidden, code: "attestation_failed", detail: "the device attestation failed"},
	{err: appattest.ErrMalformed, status: fiber.StatusBadRequest, code: "bad_request", detail: "malformed attestation object"},
	// A sale's attestation (package attest/device): no evidence on a sale
	// that requires it, a spent or unknown challenge, unreadable headers.
	{err: device.ErrRequired, status: fiber.StatusForbidden, code: "attestation_failed",
		detail: "this sale is sold through the shop's app: the request must carry a device attestation (X-Attest-Challenge with X-Attest-Key-Id and X-Attest-Assertion, or X-Play-Integrity)"},
	{err: device.ErrChallenge, status: fiber.StatusForbidden, code: "attestation_failed", detail: "the attestation challenge is spent, expired or unknown: ask for a new one"},
	{err: device.ErrMalformed, status: fiber.StatusBadRequest, code: "bad_request",
		detail: "malformed attestation: X-Attest-Challenge is a challenge from POST /events/{id}/attest/challenge; with it, either X-Attest-Key-Id (base64 of 32 bytes) and X-Attest-Assertion (base64), or X-Play-Integrity"},

	// The door's lists (package door/lists): their errors' text is
	// written for staff (it names the list, the sale or the line). A line
	// error wraps lists.ErrInvalid: before it.
	{match: isLineError, status: fiber.StatusBadRequest, code: "bad_request", ownText: true, fill: lineOf},
	{err: lists.ErrNoList, status: fiber.StatusNotFound, code: "no_list", detail: "no such list"},
	{err: lists.ErrExists, status: fiber.StatusConflict, code: "exists", detail: "a list of that name exists"},
	{err: lists.ErrInUse, status: fiber.StatusConflict, code: "in_use", ownText: true},
	{err: lists.ErrTooLarge, status: fiber.StatusRequestEntityTooLarge, code: "too_large", ownText: true},
	{err: lists.ErrUnknownList, status: fiber.StatusBadRequest, code: "bad_request", ownText: true},
	{err: lists.ErrInvalid, status: fiber.StatusBadRequest, code: "bad_request", ownText: true},

	// Never returned to a handler: a weak secret stops the node at start,
	// a bad webhook signature is the shop's verifier's answer, a full
	// safety-net room sends the gate's visitor to the waiting page.
	// Should one reach a client, it is an internal error, logged. (So is
	// internal/node.ErrDraining, which no row can name: that package
	// imports this one. A draining node answers /readyz with its own
	// problem.)
	{err: admission.ErrFull, status: fiber.StatusInternalServerError, code: "internal", detail: internalError, internal: true},
	{err: tokens.ErrWeakSecret, status: fiber.StatusInternalServerError, code: "internal", detail: internalError, internal: true},
	{err: lifecycle.ErrBadSignature, status: fiber.StatusInternalServerError, code: "internal", detail: internalError, internal: true},
	// A refused dial target is a background probe's, webhook's or push's
	// (staff see its class); the key stages are `anteroom keys`'s.
	{err: netguard.ErrRefused, status: fiber.StatusInternalServerError, code: "internal", detail: internalError, internal: true},
	{err: tokens.ErrNextPending, status: fiber.StatusInternalServerError, code: "internal", detail: internalError, internal: true},
	{err: tokens.ErrNoNext, status: fiber.StatusInternalServerError, code: "internal", detail: internalError, internal: true},
	{err: tokens.ErrTooSoon, status: fiber.StatusInternalServerError, code: "internal", detail: internalError, internal: true},
	// A sales file's problem is `anteroom apply`'s, found before any request.
	{err: salefile.ErrFormat, status: fiber.StatusInternalServerError, code: "internal", detail: internalError, internal: true},

	// fiber's own errors.
	{match: fiberStatus(fiber.StatusRequestEntityTooLarge), status: fiber.StatusRequestEntityTooLarge, code: "too_large", detail: "request bodies are limited to 16 KB"},
	{match: fiberStatus(fiber.StatusNotFound), status: fiber.StatusNotFound, code: "not_found", detail: "no such resource"},
	{match: fiberStatus(fiber.StatusMethodNotAllowed), status: fiber.StatusMethodNotAllowed, code: "bad_request", detail: "method not allowed"},
	{match: fiberStatus(fiber.StatusBadRequest), status: fiber.StatusBadRequest, code: "bad_request", detail: "malformed request"},
	{match: fiberStatus(fiber.StatusTooManyRequests), status: fiber.StatusTooManyRequests, code: "rate_limited", retry: 1, detail: "too many requests"},
	{match: fiberStatus(fiber.StatusRequestTimeout), status: fiber.StatusRequestTimeout, code: "bad_request", detail: "the request was not received in time"},
	{match: fiberStatus(fiber.StatusRequestHeaderFieldsTooLarge), status: fiber.StatusRequestHeaderFieldsTooLarge, code: "too_large", detail: "request headers too large"},
	{match: fiber4xx, code: "bad_request", detail: "the request could not be processed"}, // status: the fiber error's

	// Redis or NATS did not answer: the request's fate is unknown and a
	// retry with the same key is safe. Still logged.
	{match: unreachable, status: fiber.StatusServiceUnavailable, code: "degraded", retry: 1, detail: RetrySameKey, internal: true},
}

// ToProblem maps every error to the problem the client sees: a *Problem
// is answered as it is, anything else by the first row of errorRows that
// matches it, and an error no row knows is a 500 with a generic detail.
// known is false when the error should be logged.
func ToProblem(err error) (p *Problem, known bool) {
	if pp := (*Problem)(nil); errors.As(err, &pp) {
		cp := *pp
		return &cp, true
	}
	if r := rowOf(err); r != nil {
		return r.problem(err), !r.internal
	}
	return NewProblem(fiber.StatusInternalServerError, "internal", internalError), false
}

// rowOf returns the first row of errorRows that matches err, or nil.
func rowOf(err error) *errorRow {
	for i := range errorRows {
		r := &errorRows[i]
		if r.match != nil && r.match(err) || r.err != nil && errors.Is(err, r.err) {
			return r
		}
	}
	return nil
}

// problem builds row r's problem for err.
func (r *errorRow) problem(err error) *Problem {
	status := r.status
	var fe *fiber.Error
	if status == 0 && errors.As(err, &fe) {
		status = fe.Code
	}
	detail := r.detail
	if r.ownText {
		detail = err.Error()
	}
	p := NewProblem(status, r.code, detail)
	p.RetryAfter = r.retry
	if r.fill != nil {
		r.fill(p, err)
	}
	return p
}

// closedRetry sets the Retry-After to the closure's announced end.
func closedRetry(p *Problem, err error) {
	var ce *event.ClosedError
	if errors.As(err, &ce) {
		p.RetryAfter = Seconds(ce.RetryAfter)
	}
}

func isNotEligible(err error) bool {
	var ne *door.NotEligibleError
	return errors.As(err, &ne)
}

// notEligibleMessage shows the sale's own message.
func notEligibleMessage(p *Problem, err error) {
	var ne *door.NotEligibleError
	if errors.As(err, &ne) && ne.Message != "" {
		p.Detail = ne.Message
	}
}

func isLineError(err error) bool {
	var le *lists.LineError
	return errors.As(err, &le)
}

// lineOf names the upload's bad line.
func lineOf(p *Problem, err error) {
	var le *lists.LineError
	if errors.As(err, &le) {
		p.Line = le.Line
	}
}

// ruleAt names the refused rule, its line and its column.
func ruleAt(p *Problem, err error) {
	var re *rules.RuleError
	if errors.As(err, &re) {
		p.Rule, p.Line, p.Column = re.Rule, re.Line, re.Column
	}
}

func isLimitError(err error) bool {
	var le *claim.LimitError
	return errors.As(err, &le)
}

// signalNamed names the signal of a signal limit.
func signalNamed(p *Problem, err error) {
	var se *claim.SignalLimitError
	if errors.As(err, &se) {
		p.Signal = se.Dim
		p.Detail = "the claims this sale allows per " + se.Dim + " are taken for yours"
	}
}

// cancelRefused names the claims that refused a cancellation and why.
func cancelRefused(p *Problem, err error) {
	var ce *claim.CancelError
	if errors.As(err, &ce) {
		p.ClaimIDs = ce.IDs
		why := make([]string, len(ce.IDs))
		for i := range ce.IDs {
			why[i] = ce.IDs[i] + " is " + ce.Why[i]
		}
		p.Detail = strings.Join(why, "; ") + ": nothing was cancelled"
	}
}

func heldClaims(p *Problem, err error) {
	var le *claim.LimitError
	if errors.As(err, &le) {
		p.ClaimIDs = le.Held
	}
}

// fiberStatus matches a *fiber.Error of status code.
func fiberStatus(code int) func(error) bool {
	return func(err error) bool {
		var fe *fiber.Error
		return errors.As(err, &fe) && fe.Code == code
	}
}

// fiber4xx matches any other *fiber.Error of a 4xx status.
func fiber4xx(err error) bool {
	var fe *fiber.Error
	return errors.As(err, &fe) && fe.Code >= 400 && fe.Code < 500
}

// unreachable reports whether err says a backing service did not answer
// (refused, reset, closed or timed out) rather than a bug.
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// ProblemLocal holds the problem ErrorHandler answered a request with.
const ProblemLocal = "anteroom.problem"

// ErrorHandler answers every error as problem+json and logs unexpected ones
// (Settle).
func ErrorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		return c.JSON(Settle(c, err, log), "application/problem+json")
	}
}
