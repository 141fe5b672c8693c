package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/anteroom/anteroom/internal/wait"
)

func eventPath(event, rest string) string { return "/events/" + url.PathEscape(event) + rest }

// Join joins event's queue (POST /events/{id}/join) and returns the
// ticket. A repeated join of one user returns the same ticket, so Join is
// retried when no answer came only once the node knows the caller (a user
// header or token, or a visitor cookie from an earlier answer): a
// retried first anonymous join would be a second visitor with a second
// place. 429 and 503 (closed, degraded) are retried after Retry-After.
func (c *Client) Join(ctx context.Context, event string) (Ticket, error) {
	_, body, err := c.do(ctx, call{op: "join", method: http.MethodPost, path: eventPath(event, "/join"), replayable: c.named})
	if err != nil {
		return Ticket{}, err
	}
	t, err := ParseJoin(body)
	if err != nil {
		return Ticket{}, fmt.Errorf("anteroom: join: %w", err)
	}
	return t, nil
}

// Status polls the place ticket holds in event (GET /events/{id}/status).
// With ticket "" the ticket cookie of an anonymous caller's join is
// presented instead. A 429 is retried after Retry-After; poll again no
// sooner than the answer's PollAfter (Wait does).
func (c *Client) Status(ctx context.Context, event, ticket string) (Status, error) {
	_, body, err := c.do(ctx, call{op: "status", method: http.MethodGet, path: eventPath(event, "/status"), bearer: ticket})
	if err != nil {
		return Status{}, err
	}
	s, err := ParseStatus(body)
	if err != nil {
		return Status{}, fmt.Errorf("anteroom: status: %w", err)
	}
	return s, nil
}

// Wait polls the place ticket holds in event at the node's pace until
// its state is final (Status.Final: admitted, sold out, not selected, the
// sale ended) and returns that answer. Each poll waits PollDelay of the
// answer before it (never sooner than poll_after_ms) and each refused
// poll its Retry-After (Retry). onUpdate, when not nil, sees every
// answer. It returns the error of a poll that fails after its retries, or
// ctx's.
func (c *Client) Wait(ctx context.Context, event, ticket string, onUpdate func(Status)) (Status, error) {
	for {
		s, err := c.Status(ctx, event, ticket)
		if err != nil {
			return Status{}, err
		}
		if onUpdate != nil {
			onUpdate(s)
		}
		if s.Final() {
			return s, nil
		}
		if !wait.Sleep(ctx, PollDelay(s.PollAfter)) {
			return Status{}, fmt.Errorf("anteroom: status: %w", ctx.Err())
		}
	}
}

// Claim spends admissionToken on a unit of event (POST
// /events/{id}/claim) under idemKey, the Idempotency-Key: "" makes a new
// random one (NewIdempotencyKey). Every retry of the call sends the same
// key, so however often it is sent the node makes at most one claim:
// after no answer, after 429 and after 503 (paused, degraded). Claim.Created
// tells the answer that made the claim (201) from a replay (200).
//
// To send the claim again after Claim returned an error (its retries
// spent, the context ended), call Claim again with the same key: make
// the key first (NewIdempotencyKey) and pass it, since a new key is a new
// claim when the first one went through unseen.
//
// Refusals callers branch on: ErrSoldOut, ErrLimitReached (Error.ClaimIDs),
// ErrPaused and ErrClosed (the admission stays valid), ErrUnauthenticated
// (an expired token), ErrForbidden.
func (c *Client) Claim(ctx context.Context, event, admissionToken, idemKey string) (Claim, error) {
	if idemKey == "" {
		idemKey = NewIdempotencyKey()
	}
	status, body, err := c.do(ctx, call{op: "claim", method: http.MethodPost, path: eventPath(event, "/claim"), bearer: admissionToken, idemKey: idemKey})
	if err != nil {
		return Claim{}, err
	}
	cl, err := ParseClaim(body)
	if err != nil {
		return Claim{}, fmt.Errorf("anteroom: claim: %w", err)
	}
	cl.Created = status == http.StatusCreated
	cl.IdempotencyKey = idemKey
	return cl, nil
}

// Claims lists the caller's claims in event, oldest first (GET
// /events/{id}/claims).
func (c *Client) Claims(ctx context.Context, event string) ([]Claim, error) {
	_, body, err := c.do(ctx, call{op: "claims", method: http.MethodGet, path: eventPath(event, "/claims")})
	if err != nil {
		return nil, err
	}
	list, err := ParseClaims(body)
	if err != nil {
		return nil, fmt.Errorf("anteroom: claims: %w", err)
	}
	return list, nil
}

// Release gives the unit of the caller's claim id back (POST
// /events/{id}/claims/{claim_id}/release) and returns the released claim.
// Releasing a released claim answers the same, so it is retried when no
// answer came; a confirmed claim is ErrConflict.
func (c *Client) Release(ctx context.Context, event, id string) (Claim, error) {
	_, body, err := c.do(ctx, call{op: "release", method: http.MethodPost, path: eventPath(event, "/claims/"+url.PathEscape(id)+"/release")})
	if err != nil {
		return Claim{}, err
	}
	cl, err := ParseClaim(body)
	if err != nil {
		return Claim{}, fmt.Errorf("anteroom: release: %w", err)
	}
	return cl, nil
}
