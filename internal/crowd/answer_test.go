package crowd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/anteroom/anteroom/client"
)

func TestExchange(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/events/e/claim":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"degraded"}`))
		case "/events/e/status":
			if r.Header.Get("X-User-ID") != "u1" || r.Header.Get("Authorization") != "Bearer t" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(`{"state":"waiting","position":7,"poll_after_ms":2500}`))
		case "/events/e/join":
			_, _ = w.Write([]byte(`{"ticket":"tk","seq":3,"position":null,"state":"prequeue","poll_after_ms":1000}`))
		case "/events/e/claims/c1":
			_, _ = w.Write([]byte(`{"claim_id":"c1","event":"e","status":"confirmed","position":4}`))
		case "/events/e/claims/c1/release":
			_, _ = w.Write([]byte(`not json`))
		case "/html":
			w.Header().Set("Retry-After", "soon")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`<html>bad gateway</html>`))
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	a := Exchange(ctx, srv.Client(), http.MethodPost, srv.URL+"/events/e/claim")
	if a.Err != nil || a.Status != http.StatusServiceUnavailable || a.Code != "degraded" || a.RetryAfter != 3*time.Second || !a.HasRetryAfter || a.Undecodable {
		t.Errorf("busy: got %+v, want 503 degraded, Retry-After 3s", a)
	}

	a = Exchange(ctx, srv.Client(), http.MethodGet, srv.URL+"/events/e/status", map[string]string{"X-User-ID": "nobody"}, map[string]string{"X-User-ID": "u1", "Authorization": "Bearer t"})
	if a.Status != http.StatusOK || a.State() != "waiting" || a.Place.Position != 7 || a.Place.PollAfter != 2500*time.Millisecond || a.Code != "" || a.HasRetryAfter {
		t.Errorf("status: got %+v, want 200 waiting at 7, poll after 2.5s (later header maps win)", a)
	}

	a = Exchange(ctx, srv.Client(), http.MethodPost, srv.URL+"/events/e/join")
	if a.Status != http.StatusOK || a.Join.Ticket != "tk" || a.Join.Position != 0 || a.State() != "prequeue" || a.Undecodable {
		t.Errorf("join: got %+v, want ticket tk, no position yet, prequeue", a)
	}

	a = Exchange(ctx, srv.Client(), http.MethodGet, srv.URL+"/events/e/claims/c1")
	if a.Status != http.StatusOK || a.Claim.ID != "c1" || a.State() != "confirmed" {
		t.Errorf("lookup: got %+v, want c1 confirmed", a)
	}

	a = Exchange(ctx, srv.Client(), http.MethodPost, srv.URL+"/events/e/claims/c1/release")
	if a.Status != http.StatusOK || !a.Undecodable || a.Claim.ID != "" {
		t.Errorf("release: got %+v, want 200 with an undecodable body", a)
	}

	a = Exchange(ctx, srv.Client(), http.MethodGet, srv.URL+"/html")
	if a.Err != nil || a.Status != http.StatusBadGateway || a.Code != "" || !a.HasRetryAfter || a.RetryAfter != 0 {
		t.Errorf("html: got %+v, want 502, no code, a Retry-After that is no number", a)
	}

	srv.Close()
	a = Exchange(ctx, srv.Client(), http.MethodGet, srv.URL+"/events/e/status")
	if a.Err == nil || a.Status != 0 || a.Cut {
		t.Errorf("closed server: got %+v, want a transport error and no status", a)
	}
}

// TestBackoff checks that Backoff follows client/'s rules: a 429 or 503
// is sent again, no answer only when the call is replayable, any other
// refusal never, and not past the attempts.
func TestBackoff(t *testing.T) {
	ctx := context.Background()
	r := client.Retry{Attempts: 3, NetworkWait: time.Millisecond}
	for _, c := range []struct {
		name       string
		n          int
		a          Answer
		replayable bool
		want       bool
	}{
		{"503 with Retry-After 0", 1, Answer{Status: 503, HasRetryAfter: true}, false, true},
		{"429 with Retry-After 0", 2, Answer{Status: 429, HasRetryAfter: true}, false, true},
		{"no answer, replayable", 1, Answer{}, true, true},
		{"no answer, not replayable", 1, Answer{}, false, false},
		{"500", 1, Answer{Status: 500}, true, false},
		{"409", 1, Answer{Status: 409, Code: "limit_reached"}, true, false},
		{"503 after the last attempt", 3, Answer{Status: 503, HasRetryAfter: true}, true, false},
	} {
		if got := Backoff(ctx, r, c.n, c.a, c.replayable); got != c.want {
			t.Errorf("%s: Backoff = %v, want %v", c.name, got, c.want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if Backoff(cancelled, r, 1, Answer{Status: 503, HasRetryAfter: true, RetryAfter: time.Second}, true) {
		t.Error("Backoff with a cancelled context = true, want false")
	}
}
