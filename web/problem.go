package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
	"github.com/anteroom/anteroom/tokens"
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
	case "unauthenticated":
		return "Authentication required"
	case "forbidden", "not_admitted", "not_open", "not_selected":
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
	case "degraded":
		return "Temporarily unavailable"
	case "conflict", "locked", "not_configured":
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
	case errors.Is(err, tokens.ErrWrongEvent):
		return problem(fiber.StatusForbidden, "forbidden", "the token is for another event"), true
	case errors.Is(err, tokens.ErrInvalid):
		return problem(fiber.StatusUnauthorized, "unauthenticated", "the token is invalid or expired"), true
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

// errorHandler answers every error as problem+json and logs unexpected ones.
func errorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		p, known := toProblem(err)
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
