package crowd

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/anteroom/anteroom/internal/wait"
)

// Answer is one HTTP exchange of a simulated shopper, decoded: what every
// crowd (this package's, the soak's, the drills') reads from an answer of
// the public API. Each crowd keeps its own account of it.
type Answer struct {
	// Status is the HTTP status; 0 when no answer came (Err is set).
	Status int
	// Body is the decoded JSON object; nil when there was none or it was
	// not one (see Undecodable).
	Body map[string]any
	// Code is the problem+json code; "" when the body has none.
	Code string
	// RetryAfter is the Retry-After header in whole seconds; 0 when it is
	// absent or not a number. HasRetryAfter reports whether the header
	// came at all.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Undecodable reports a non-empty body that is not a JSON object.
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

// maxBody bounds how much of an answer is read.
const maxBody = 1 << 16

// Exchange sends one bodiless request with the headers of hdrs (later maps
// win) and decodes the answer. ctx bounds the whole exchange; a client's
// own timeout applies too. It is safe for concurrent use when client is.
func Exchange(ctx context.Context, client *http.Client, method, url string, hdrs ...map[string]string) Answer {
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
	resp, err := client.Do(req)
	if err != nil {
		return Answer{Err: err}
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if err != nil {
		return Answer{Err: err, Cut: true, Took: time.Since(start)}
	}
	a := Answer{Status: resp.StatusCode, Took: time.Since(start)}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		a.HasRetryAfter = true
		if s, err := strconv.Atoi(ra); err == nil {
			a.RetryAfter = time.Duration(s) * time.Second
		}
	}
	if len(raw) > 0 && json.Unmarshal(raw, &a.Body) != nil {
		a.Undecodable = true
	}
	a.Code = a.Str("code")
	return a
}

// Backoff waits after an answer that asks for a retry (403 not_open,
// 429, 503): its Retry-After, at least 200 ms and at most 2 s (a crowd
// moves on), plus up to 200 ms of jitter so a crowd refused together does
// not come back together. It reports whether ctx is still live.
func Backoff(ctx context.Context, retryAfter time.Duration) bool {
	d := min(max(retryAfter, 200*time.Millisecond), 2*time.Second)
	return wait.Sleep(ctx, d+time.Duration(rand.Int64N(int64(200*time.Millisecond))))
}

// Str returns the body's string field k; "" when it is absent or not a
// string.
func (a Answer) Str(k string) string { s, _ := a.Body[k].(string); return s }

// Num returns the body's number field k; 0 when it is absent or not a
// number.
func (a Answer) Num(k string) float64 { f, _ := a.Body[k].(float64); return f }

// PollAfter is the wait the server asked for before the next status
// poll (poll_after_ms), capped at most and raised to at least least.
func (a Answer) PollAfter(least, most time.Duration) time.Duration {
	return max(min(time.Duration(a.Num("poll_after_ms"))*time.Millisecond, most), least)
}
