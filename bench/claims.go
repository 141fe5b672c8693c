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
	secret, err := tokens.LoadOrCreateSecret(filepath.Join(s.dir, "data", "ticket-secret"))
	if err != nil {
		return nil, err
	}
	iss := tokens.NewIssuer(keys, tokens.IssuerConfig{MACKey: tokens.AdmissionMACKey(secret)}) // as the node's status does
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

// claimLoad fires claims with distinct tokens from workers connections for
// d (closed loop) and returns granted claims per second.
func claimLoad(_ context.Context, s *stack, ev string, toks []string, workers int, d time.Duration) (float64, int64, error) {
	var next, granted, other atomic.Int64
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				i := next.Add(1) - 1
				if int(i) >= len(toks) {
					return
				}
				code, err := s.fastDo(http.MethodPost, "/events/"+ev+"/claim", map[string]string{"Authorization": "Bearer " + toks[i]})
				if err == nil && code == http.StatusCreated {
					granted.Add(1)
				} else {
					other.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	return float64(granted.Load()) / el, other.Load(), nil
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
	rate, other, err := claimLoad(ctx, s, "bclaim", toks[:n/2], conns, r.d)
	if err != nil {
		return err
	}
	s.claimNext = n / 2
	r.peaks["claim"] = rate
	r.command(fmt.Sprintf("claims: %d Go workers, keep-alive HTTP, distinct pre-minted admission tokens, %s closed loop", conns, r.d))
	r.add("granted claims/s end to end (absolute)", fmt.Sprintf("%.0f/s", rate), "", 0, "≥ 10,000/s", rate >= 10000)
	if other > 0 {
		r.note(fmt.Sprintf("claims: %d answers other than 201 during the closed-loop run", other))
	}
	return nil
}
