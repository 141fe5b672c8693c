package crowd

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/internal/wait"
)

// Answer is one HTTP exchange of a simulated shopper, read by client/'s
// decoders: what the crowds that record every sending (the soak's, the
// drills') read from an answer of the public API. Each crowd keeps its
// own account of it.
type Answer struct {
	// Status is the HTTP status; 0 when no answer came (Err is set).
	Status int
	// Code is the problem+json code of a refusal (client.ParseProblem);
	// "" for a 2xx or a body that is no problem.
	Code string
	// RetryAfter is the Retry-After header as client.ParseRetryAfter
	// reads it; 0 when it is absent or unreadable. HasRetryAfter reports
	// whether the header came at all.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Join, Place, Claim and Claims are a 2xx answer as client/ decodes
	// it, by the call its URL names: a join (Join), a status poll
	// (Place), a claim, release or lookup (Claim), the claims list
	// (Claims). The others stay zero.
	Join   client.Ticket
	Place  client.Status
	Claim  client.Claim
	Claims []client.Claim
	// Undecodable reports a 2xx body of one of those calls that client/
	// cannot read.
	Undecodable bool
	// Err is why no answer came: the request failed, or its body could
	// not be read (then Cut is set too).
	Err error
	// Cut reports that a status came but the body could not be read;
	// Status is 0 all the same.
	Cut bool
	// Took is from sending the request to having read the answer.
	Took time.Duration
}

// State is the answer's state: a join's or status poll's place
// (waiting, admitted, ...) or a claim's status (pending, confirmed,
// released); "" for other answers.
func (a Answer) State() string {
	switch {
	case a.Place.State != "":
		return string(a.Place.State)
	case a.Join.State != "":
		return string(a.Join.State)
	}
	return a.Claim.Status
}

// maxBody bounds how much of an answer is read.
const maxBody = 1 << 16

// Exchange sends one bodiless request with the headers of hdrs (later maps
// win), once, and decodes the answer with client/'s decoders. ctx bounds
// the whole exchange; a client's own timeout applies too. It is safe for
// concurrent use when hc is.
func Exchange(ctx context.Context, hc *http.Client, method, url string, hdrs ...map[string]string) Answer {
	req, err := http.NewRequestWithContext(ctx, method, url, http.NoBody)
	if err != nil {
		return Answer{Err: err}
	}
	for _, hdr := range hdrs {
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{Err: err}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if err != nil {
		return Answer{Err: err, Cut: true, Took: time.Since(start)}
	}
	a := Answer{Status: resp.StatusCode, Took: time.Since(start)}
	ra := resp.Header.Get("Retry-After")
	a.HasRetryAfter = ra != ""
	if a.Status < 200 || a.Status > 299 {
		p := client.ParseProblem(call(req.URL.Path), a.Status, raw, ra, time.Now())
		a.Code, a.RetryAfter = string(p.Code), p.RetryAfter
		return a
	}
	a.RetryAfter, _ = client.ParseRetryAfter(ra, time.Now())
	switch call(req.URL.Path) {
	case "join":
		a.Join, err = client.ParseJoin(raw)
	case "status":
		a.Place, err = client.ParseStatus(raw)
	case "claim", "release", "lookup":
		a.Claim, err = client.ParseClaim(raw)
	case "claims":
		a.Claims, err = client.ParseClaims(raw)
	}
	a.Undecodable = err != nil
	return a
}

// call names the public API's call at path: join, status, claim,
// claims, lookup (one claim), release; "" for another path.
func call(path string) string {
	_, rest, ok := strings.Cut(path, "/events/")
	if !ok {
		return ""
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 2 && (parts[1] == "join" || parts[1] == "status" || parts[1] == "claim" || parts[1] == "claims"):
		return parts[1]
	case len(parts) == 3 && parts[1] == "claims":
		return "lookup"
	case len(parts) == 4 && parts[1] == "claims" && parts[3] == "release":
		return "release"
	}
	return ""
}

// Backoff waits as r, client/'s retry rules, say after the nth sending
// of a call came to a, and reports whether to send it again: after 429
// and 503 no sooner than their Retry-After, after no answer (or a proxy's
// 502 or 504) only when replayable, never after any other answer, and
// false as well when ctx ends first.
func Backoff(ctx context.Context, r client.Retry, n int, a Answer, replayable bool) bool {
	d, again := r.Next(client.Attempt{N: n, Status: a.Status, RetryAfter: a.RetryAfter, HasRetryAfter: a.HasRetryAfter, Replayable: replayable})
	return again && wait.Sleep(ctx, d)
}
