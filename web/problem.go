package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/staff"
	"github.com/anteroom/anteroom/limit"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/report"
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
	// Line is the line of a page template a bad_template problem is on.
	Line int `json:"line,omitempty"`
}

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// problem builds a Problem; detail is shown to the client, so it must never
// carry internal error text.
func problem(status int, code, detail string) *Problem {
	return &Problem{Type: "https://anteroom.dev/problems/" + code, Title: titleOf(code), Status: status, Code: code, Detail: detail}
}

func titleOf(code string) string {
	switch code {
	case "bad_request":
		return "Bad request"
	case "bad_template":
		return "Bad page template"
	case "unauthenticated":
		return "Authentication required"
	case "forbidden", "not_admitted", "not_open", "not_selected", "invite_required", "invite_invalid", "pass_invalid", "pass_revoked", "pass_used_up":
		return "Not allowed"
	case "unknown_event", "not_found", "unknown_session":
		return "Not found"
	case "limit_reached":
		return "Limit reached"
	case "sold_out":
		return "Sold out"
	case "rate_limited":
		return "Too many requests"
	case "paused":
		return "Paused"
	case "degraded", "stock_not_laid":
		return "Temporarily unavailable"
	case "conflict", "locked", "not_configured", "needs_rebuild":
		return "Conflict"
	case "too_large":
		return "Request body too large"
	}
	return "Internal error"
}

// Common problems.
var (
	errUnknownEvent = problem(fiber.StatusNotFound, "unknown_event", "no such event")
	errNoToken      = problem(fiber.StatusUnauthorized, "unauthenticated", "missing or malformed credentials")
)

func badRequest(format string, a ...any) *Problem {
	return problem(fiber.StatusBadRequest, "bad_request", fmt.Sprintf(format, a...))
}

func retryLater(code, detail string, seconds int) *Problem {
	p := problem(fiber.StatusServiceUnavailable, code, detail)
	p.RetryAfter = seconds
	return p
}

// toProblem maps every error to the problem the client sees. It is the one
// place where domain errors become HTTP.
func toProblem(err error) (*Problem, bool) {
	var p *Problem
	var fe *fiber.Error
	var le *claim.LimitError
	switch {
	case errors.As(err, &p):
		cp := *p
		return &cp, true
	case errors.As(err, &le):
		p := problem(fiber.StatusConflict, "limit_reached", "you already hold your allowed claims")
		p.ClaimIDs = le.Held
		return p, true
	case errors.Is(err, turnstile.ErrNotForSale):
		return problem(fiber.StatusForbidden, "forbidden", "this event is a safety-net room: it sells nothing"), true
	case errors.Is(err, turnstile.ErrNoToken):
		p := *errNoToken // errorHandler sets the copy's instance
		return &p, true
	case errors.Is(err, turnstile.ErrOtherUser):
		return problem(fiber.StatusForbidden, "forbidden", "the admission token belongs to another user"), true
	case errors.Is(err, turnstile.ErrPaused):
		return retryLater("paused", "the sale is paused; your admission stays valid", 5), true
	case errors.Is(err, tokens.ErrPassInvalid): // before tokens.ErrInvalid, which it wraps
		return problem(fiber.StatusForbidden, "pass_invalid", "this pass is not valid for this sale, or has expired"), true
	case errors.Is(err, tokens.ErrInviteInvalid): // before tokens.ErrInvalid, which it wraps
		return problem(fiber.StatusForbidden, "invite_invalid", "this invite is not for this sale and account, or has expired"), true
	case errors.Is(err, tokens.ErrWrongEvent):
		return problem(fiber.StatusForbidden, "forbidden", "the token is for another event"), true
	case errors.Is(err, tokens.ErrInvalid):
		return problem(fiber.StatusUnauthorized, "unauthenticated", "the token is invalid or expired"), true
	case errors.Is(err, claim.ErrLimitReached):
		return problem(fiber.StatusConflict, "limit_reached", "you already hold your allowed claims"), true
	case errors.Is(err, claim.ErrNeedsRebuild):
		// A failover, a slot migration or lost data: the stock on this
		// Redis may be stale until an operator rebuilds it (POST
		// /admin/events/{id}/rebuild). It wraps ErrPaused: first.
		return retryLater("paused", "claims wait for the stock to be rebuilt after a change of Redis server (failover, slot migration or lost data); retry with the same Idempotency-Key", 5), true
	case errors.Is(err, claim.ErrPaused):
		// A rebuild froze the stock (or replaced the stock a grant was
		// decided on): the same request succeeds after it.
		return retryLater("paused", "the sale is paused; retry with the same Idempotency-Key", 5), true
	case errors.Is(err, claim.ErrConfirmed):
		return problem(fiber.StatusConflict, "conflict", "a confirmed claim cannot be released"), true
	case errors.Is(err, claim.ErrHoldLost):
		return retryLater("stock_not_laid", "the change was saved but its stock could not be laid; save again, or rebuild the stock from the saved configuration", 5), true
	case errors.Is(err, claim.ErrRebuildRunning):
		return problem(fiber.StatusConflict, "conflict", "a rebuild of this event is already running"), true
	case errors.Is(err, staff.ErrNotFound):
		return problem(fiber.StatusNotFound, "not_found", "no such account or API key"), true
	case errors.Is(err, staff.ErrExists):
		return problem(fiber.StatusConflict, "conflict", "an account of that name exists"), true
	case errors.Is(err, staff.ErrLastAdmin):
		return problem(fiber.StatusConflict, "conflict", "the last admin account cannot be removed or demoted"), true
	case errors.Is(err, staff.ErrBadLogin):
		return problem(fiber.StatusUnauthorized, "unauthenticated", "wrong name, password or key"), true
	case errors.Is(err, limit.ErrTaken):
		return problem(fiber.StatusConflict, "limit_reached", "this device or payment method has already been used by another account in this sale"), true
	case errors.Is(err, admission.ErrUnknownSession):
		return problem(fiber.StatusNotFound, "unknown_session",
			"no admission token with this jti was issued for this sale (sessions are kept only for sales with max_active, from about a tick after the token is issued until 10 minutes after it expires)"), true
	case errors.Is(err, admission.ErrPassUnknown):
		return problem(fiber.StatusNotFound, "not_found", "no such pass"), true
	case errors.Is(err, admission.ErrPassExists):
		return problem(fiber.StatusConflict, "conflict", "pass id taken; mint again"), true
	case errors.Is(err, admission.ErrPassRevoked):
		return problem(fiber.StatusForbidden, "pass_revoked", "this pass was revoked"), true
	case errors.Is(err, admission.ErrPassUsedUp):
		return problem(fiber.StatusForbidden, "pass_used_up", "this pass has been used as often as it may"), true
	case errors.Is(err, report.ErrNotInView):
		return retryLater("degraded", "this node has not read the event yet; retry in a moment", 1), true
	case errors.Is(err, claim.ErrSoldOut):
		return problem(fiber.StatusGone, "sold_out", "no stock left"), true
	case errors.Is(err, claim.ErrNotFound):
		return problem(fiber.StatusNotFound, "not_found", "no such claim"), true
	case errors.Is(err, claim.ErrUnavailable):
		return retryLater("degraded", "the order stream is not answering; retry with the same Idempotency-Key", 1), true
	case errors.Is(err, queue.ErrNotOpen):
		return problem(fiber.StatusForbidden, "not_open", "the queue is not open yet"), true
	case errors.Is(err, queue.ErrClosed):
		return problem(fiber.StatusForbidden, "forbidden", "joining has ended"), true
	case errors.Is(err, queue.ErrStaleView):
		return retryLater("degraded", "this node's view of the sale is out of date; retry in a moment", 1), true
	case errors.Is(err, event.ErrNotFound):
		return errUnknownEvent, true
	case errors.Is(err, event.ErrInvalid):
		return badRequest("%s", err.Error()), true
	case errors.Is(err, event.ErrLocked):
		return problem(fiber.StatusConflict, "locked", err.Error()), true
	case errors.Is(err, event.ErrConflict):
		return problem(fiber.StatusConflict, "conflict", "the event changed concurrently; read it again and retry"), true
	case errors.As(err, &fe):
		switch fe.Code {
		case fiber.StatusRequestEntityTooLarge:
			return problem(fe.Code, "too_large", "request bodies are limited to 16 KB"), true
		case fiber.StatusNotFound:
			return problem(fe.Code, "not_found", "no such resource"), true
		case fiber.StatusMethodNotAllowed:
			return problem(fe.Code, "bad_request", "method not allowed"), true
		case fiber.StatusBadRequest:
			return badRequest("malformed request"), true
		case fiber.StatusTooManyRequests:
			p := problem(fe.Code, "rate_limited", "too many requests")
			p.RetryAfter = 1
			return p, true
		case fiber.StatusRequestTimeout:
			return problem(fe.Code, "bad_request", "the request was not received in time"), true
		case fiber.StatusRequestHeaderFieldsTooLarge:
			return problem(fe.Code, "too_large", "request headers too large"), true
		}
		if fe.Code >= 400 && fe.Code < 500 {
			return problem(fe.Code, "bad_request", "the request could not be processed"), true
		}
	}
	if unreachable(err) {
		// Redis or NATS did not answer: the request's fate is unknown and a
		// retry with the same key is safe. Still logged (known = false).
		return retryLater("degraded", "a backing service is not answering; retry with the same Idempotency-Key", 1), false
	}
	return problem(fiber.StatusInternalServerError, "internal", "something went wrong; quote the request id when reporting it"), false
}

// unreachable reports whether err says a backing service did not answer
// (refused, reset, closed or timed out) rather than a bug.
func unreachable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// problemLocal holds the problem errorHandler answered a request with.
const problemLocal = "anteroom.problem"

// errorHandler answers every error as problem+json and logs unexpected ones.
func errorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		p, known := toProblem(err)
		c.Locals(problemLocal, p) // for the refusal count (countRefusal)
		p.Instance = c.Path()
		p.RequestID = requestID(c)
		if !known {
			log.Error("request failed", "request_id", p.RequestID, "method", c.Method(), "path", c.Path(), "err", err)
		}
		if p.RetryAfter > 0 {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(p.RetryAfter))
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		c.Status(p.Status)
		return c.JSON(p, "application/problem+json")
	}
}
