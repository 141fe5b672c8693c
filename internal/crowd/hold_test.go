package crowd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestHoldFollowsClientRules plays one person of a hold crowd (the flash
// crowd's generator) against a node that refuses the first join and the
// first claim with 503 and Retry-After: 1 and asks for polls 1.5 s apart.
// The person must follow client/'s rules: come back no sooner than the
// Retry-After, poll no sooner than poll_after_ms, send the claim again
// with the same Idempotency-Key, and read the claim id from the answer.
func TestHoldFollowsClientRules(t *testing.T) {
	var mu sync.Mutex
	sent := map[string][]time.Time{}
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		sent[r.URL.Path] = append(sent[r.URL.Path], time.Now())
		n := len(sent[r.URL.Path])
		if r.Header.Get("X-User-ID") != "h0" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		busy := func() {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"degraded","status":503}`))
		}
		switch r.URL.Path {
		case "/events/e/join":
			if n == 1 {
				busy()
				return
			}
			_, _ = w.Write([]byte(`{"ticket":"tk","seq":1,"position":1,"state":"waiting","poll_after_ms":1500}`))
		case "/events/e/status":
			if r.Header.Get("Authorization") != "Bearer tk" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			if n == 1 {
				_, _ = w.Write([]byte(`{"state":"waiting","position":1,"ahead":0,"poll_after_ms":1500}`))
				return
			}
			_, _ = w.Write([]byte(`{"state":"admitted","position":1,"poll_after_ms":30000,"admission_token":"adm"}`))
		case "/events/e/claim":
			keys = append(keys, r.Header.Get("Idempotency-Key"))
			if r.Header.Get("Authorization") != "Bearer adm" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			if n == 1 {
				busy()
				return
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"claim_id":"c-1","status":"pending"}`))
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Hold(ctx, HoldConfig{URLs: []string{srv.URL}, Event: "e", People: 1, Hold: 30 * time.Second, Claim: true,
		Until: func(s HoldStats) bool { return s.Claimed+s.ClaimSoldOut+s.Errors > 0 }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Claimed != 1 || res.Claims["h0"] != "c-1" {
		t.Fatalf("errors %d %v, claimed %d, claims %v: want one claim c-1 and no error", res.Errors, res.FirstErrors, res.Claimed, res.Claims)
	}
	mu.Lock()
	defer mu.Unlock()
	join, status, claim := sent["/events/e/join"], sent["/events/e/status"], sent["/events/e/claim"]
	if len(join) != 2 || len(status) != 2 || len(claim) != 2 {
		t.Fatalf("sent %d joins, %d polls, %d claims; want 2 of each", len(join), len(status), len(claim))
	}
	for _, c := range []struct {
		what      string
		from, to  time.Time
		notSooner time.Duration
	}{
		{"the join after 503 Retry-After: 1", join[0], join[1], time.Second},
		{"the first poll after a join asking for 1.5 s", join[1], status[0], 1500 * time.Millisecond},
		{"the second poll after a status asking for 1.5 s", status[0], status[1], 1500 * time.Millisecond},
		{"the claim after 503 Retry-After: 1", claim[0], claim[1], time.Second},
	} {
		if gap := c.to.Sub(c.from); gap < c.notSooner {
			t.Errorf("%s came %s later, sooner than the node asked (%s)", c.what, gap, c.notSooner)
		}
	}
	if keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("claim Idempotency-Keys %q: want one key, sent again", keys)
	}
}
