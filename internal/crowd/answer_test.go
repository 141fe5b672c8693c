package crowd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestExchange(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/busy":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"degraded"}`))
		case "/status":
			if r.Header.Get("X-User-ID") != "u1" || r.Header.Get("Authorization") != "Bearer t" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte(`{"state":"waiting","poll_after_ms":2500}`))
		case "/html":
			w.Header().Set("Retry-After", "soon")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`<html>bad gateway</html>`))
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	a := Exchange(ctx, srv.Client(), http.MethodPost, srv.URL+"/busy")
	if a.Err != nil || a.Status != http.StatusServiceUnavailable || a.Code != "degraded" || a.RetryAfter != 3*time.Second || !a.HasRetryAfter || a.Undecodable {
		t.Errorf("busy: got %+v, want 503 degraded, Retry-After 3s", a)
	}

	a = Exchange(ctx, srv.Client(), http.MethodGet, srv.URL+"/status", map[string]string{"X-User-ID": "nobody"}, map[string]string{"X-User-ID": "u1", "Authorization": "Bearer t"})
	if a.Status != http.StatusOK || a.Str("state") != "waiting" || a.Code != "" || a.HasRetryAfter {
		t.Errorf("status: got %+v, want 200 waiting (later header maps win)", a)
	}
	if got, want := a.PollAfter(50*time.Millisecond, time.Second), time.Second; got != want {
		t.Errorf("PollAfter(50ms, 1s) = %s, want %s (capped)", got, want)
	}
	if got, want := a.PollAfter(50*time.Millisecond, 30*time.Second), 2500*time.Millisecond; got != want {
		t.Errorf("PollAfter(50ms, 30s) = %s, want %s", got, want)
	}
	if got, want := (Answer{}).PollAfter(50*time.Millisecond, time.Second), 50*time.Millisecond; got != want {
		t.Errorf("PollAfter without poll_after_ms = %s, want %s (the floor)", got, want)
	}

	a = Exchange(ctx, srv.Client(), http.MethodGet, srv.URL+"/html")
	if a.Err != nil || a.Status != http.StatusBadGateway || !a.Undecodable || a.Body != nil || !a.HasRetryAfter || a.RetryAfter != 0 {
		t.Errorf("html: got %+v, want 502, undecodable, a Retry-After that is no number", a)
	}

	srv.Close()
	a = Exchange(ctx, srv.Client(), http.MethodGet, srv.URL+"/status")
	if a.Err == nil || a.Status != 0 || a.Cut {
		t.Errorf("closed server: got %+v, want a transport error and no status", a)
	}
}
