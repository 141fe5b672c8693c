package tokens

import (
	"sync"
	"testing"
	"time"
)

// TestKeySetConcurrentUse issues and verifies admission tokens from several
// goroutines while another rotates and reloads the key set: readers must
// always see a complete snapshot, and a token signed under one snapshot
// must verify under any later one (no key is retired here). Run with -race.
func TestKeySetConcurrentUse(t *testing.T) {
	dir := t.TempDir()
	keys := openTestKeys(t, dir)
	peer := openTestKeys(t, dir) // another node on the same directory
	iss, peerIss := NewIssuer(keys, IssuerConfig{}), NewIssuer(peer, IssuerConfig{})
	const workers, rounds = 4, 50
	errs := make(chan error, workers*rounds+10)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for n := range rounds {
				raw, _, err := iss.Issue("ev", "u", int64(w*rounds+n+1), time.Minute, t0())
				if err == nil {
					_, err = iss.Verify(raw, "ev", t0())
				}
				if err != nil {
					errs <- err
				}
				_ = keys.JWKS()
			}
		})
	}
	wg.Go(func() {
		for n := range 5 {
			if _, err := peer.Rotate(t0().Add(time.Duration(n) * time.Second)); err != nil {
				errs <- err
			}
			if err := keys.Reload(); err != nil {
				errs <- err
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := keys.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, want := keys.Active(), peer.Active(); got != want {
		t.Errorf("after Reload: got active %s, want the peer's %s", got, want)
	}
	if got, want := len(keys.Kids()), 6; got != want {
		t.Errorf("Kids: got %d keys, want %d (first key and five rotations)", got, want)
	}
	raw, _, err := peerIss.Issue("ev", "u", 1, time.Minute, t0())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iss.Verify(raw, "ev", t0()); err != nil {
		t.Errorf("verifying the peer's token: got %v, want success", err)
	}
}
