package crowd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestRunWaitsForTheQueueToOpen plays one anonymous shopper of Run
// against a node whose queue opens a second after the first join: the
// 403 not_open with Retry-After: 1 is the one refusal the client leaves
// to the crowd, which must come back no sooner than asked, keep the
// visitor cookie the node set, then poll, claim and count the grant.
func TestRunWaitsForTheQueueToOpen(t *testing.T) {
	var mu sync.Mutex
	var joins []time.Time
	var cookies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/events/e/join":
			joins = append(joins, time.Now())
			c, _ := r.Cookie("anteroom_visitor")
			if c != nil {
				cookies = append(cookies, c.Value)
			} else {
				cookies = append(cookies, "")
			}
			if len(joins) == 1 {
				http.SetCookie(w, &http.Cookie{Name: "anteroom_visitor", Value: "v1", Path: "/"})
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"code":"not_open","status":403}`))
				return
			}
			_, _ = w.Write([]byte(`{"ticket":"tk","seq":1,"position":1,"state":"waiting","poll_after_ms":1000}`))
		case "/events/e/status":
			_, _ = w.Write([]byte(`{"state":"admitted","position":1,"poll_after_ms":30000,"admission_token":"adm"}`))
		case "/events/e/claim":
			if r.Header.Get("Idempotency-Key") != "k-u0" || r.Header.Get("Authorization") != "Bearer adm" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"claim_id":"c-1","status":"pending"}`))
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, Config{URLs: []string{srv.URL}, Event: "e", Users: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Joined != 1 || res.Admitted != 1 || res.Granted != 1 || res.Claims["u0"][0] != "c-1" {
		t.Fatalf("got %+v, errors %v: want one shopper joined, admitted and granted c-1", res.Stats, res.FirstErrors)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(joins) != 2 {
		t.Fatalf("%d joins, want 2", len(joins))
	}
	if gap := joins[1].Sub(joins[0]); gap < time.Second {
		t.Errorf("joined again %s after not_open with Retry-After: 1, sooner than asked", gap)
	}
	if cookies[1] != "v1" {
		t.Errorf("the second join carried visitor cookie %q, want the node's v1", cookies[1])
	}
	if e := res.Endpoints["join"]; e.Count != 2 || res.Requests != 4 {
		t.Errorf("counted %d joins and %d requests, want 2 and 4", e.Count, res.Requests)
	}
}
