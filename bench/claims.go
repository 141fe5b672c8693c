package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anteroom/anteroom/tokens"
)

// mintTokens issues n admission tokens for event ev with the node's own key
// directory, as the node would after n status polls.
func mintTokens(s *stack, ev string, n int) ([]string, error) {
	keys, err := tokens.OpenKeyDir(filepath.Join(s.dir, "data", "keys"))
	if err != nil {
		return nil, err
	}
	iss := tokens.NewIssuer(keys, tokens.IssuerConfig{}) // as the node's status does
	out := make([]string, n)
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				tok, _, err := iss.Issue(ev, fmt.Sprintf("c%d", i), int64(i+1), 30*time.Minute, time.Now())
				if err != nil {
					failed.Store(err)
					return
				}
				out[i] = tok
			}
		}()
	}
	wg.Wait()
	if err, ok := failed.Load().(error); ok {
		return nil, err
	}
	return out, nil
}

// measureClaims measures granted claims per second end to end: HTTP,
// token verification, the claim script, the JetStream publish and its ack.
func measureClaims(ctx context.Context, s *stack, r *report) error {
	const n = 400_000
	if err := s.createEvent(ctx, "bclaim", 10_000_000, 1000, map[string]any{"buckets": 8}); err != nil {
		return err
	}
	toks, err := mintTokens(s, "bclaim", n)
	if err != nil {
		return err
	}
	s.claimTokens = toks
	// Closed loop, distinct tokens, until the first half is used or r.d ends.
	rate, other := closedLoop(s, conns, r.d, n/2, http.StatusCreated, func(i int) (string, string, map[string]string) {
		return http.MethodPost, "/events/bclaim/claim", map[string]string{"Authorization": "Bearer " + toks[i], "X-User-ID": fmt.Sprintf("c%d", i)}
	})
	s.claimNext = n / 2
	r.peaks["claim"] = rate
	r.command(fmt.Sprintf("claims: %d Go workers, keep-alive HTTP, distinct pre-minted admission tokens, %s closed loop", conns, r.d))
	r.add("granted claims/s end to end (absolute)", fmt.Sprintf("%.0f/s", rate), "", 0, "≥ 15,000/s", rate >= 15000) // issue 14
	if other > 0 {
		r.note(fmt.Sprintf("claims: %d answers other than 201 during the closed-loop run", other))
	}
	return nil
}
