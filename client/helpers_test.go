package client_test

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/client"
	"github.com/anteroom/anteroom/web/openapi/conform"
)

// exchange is one request a client sent and what came back, timed by the
// test's clock.
type exchange struct {
	method, path string
	idemKey      string
	sent, done   time.Time
	status       int // 0: no answer
	retryAfter   time.Duration
	body         []byte
}

// recorder is the transport of the clients under test: it sends through
// http.DefaultTransport, records every exchange, and checks each one
// against the node's HTTP contract (as nodetest.Call does).
type recorder struct {
	t    *testing.T
	base http.RoundTripper // default http.DefaultTransport
	mu   sync.Mutex
	ex   []exchange
}

func newRecorder(t *testing.T) *recorder { return &recorder{t: t} }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	e := exchange{method: req.Method, path: req.URL.Path, idemKey: req.Header.Get("Idempotency-Key"), sent: time.Now()}
	base := r.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err == nil {
		var raw []byte
		raw, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		if err == nil {
			e.status, e.body = resp.StatusCode, raw
			e.retryAfter, _ = client.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			if c, cerr := conform.Shared(); cerr != nil {
				r.t.Error(cerr)
			} else if cerr := c.Check(req, nil, resp.StatusCode, resp.Header, raw); cerr != nil {
				r.t.Errorf("contract (web/openapi/openapi.yaml): %v", cerr)
			}
		}
	}
	e.done = time.Now()
	r.mu.Lock()
	r.ex = append(r.ex, e)
	r.mu.Unlock()
	return resp, err
}

// of returns the exchanges whose path is path, in order.
func (r *recorder) of(path string) []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []exchange
	for _, e := range r.ex {
		if e.path == path {
			out = append(out, e)
		}
	}
	return out
}

// checkNeverSooner fails t when an exchange of ex was sent sooner after
// the answer before it than that answer's Retry-After asked (for 429 and
// 503): the client's pace, by the test's clock, never a bound from above.
func checkNeverSooner(t *testing.T, ex []exchange) {
	t.Helper()
	for i := 1; i < len(ex); i++ {
		prev := ex[i-1]
		if prev.status != http.StatusTooManyRequests && prev.status != http.StatusServiceUnavailable {
			continue
		}
		if gap := ex[i].sent.Sub(prev.done); gap < prev.retryAfter {
			t.Errorf("%s %s sent %v after a %d with Retry-After %v: sooner than asked", ex[i].method, ex[i].path, gap, prev.status, prev.retryAfter)
		}
	}
}
