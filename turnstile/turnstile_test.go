package turnstile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/anteroom/anteroom/tokens"
)

// at is the tests' instant.
var at = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// newIssuer returns a real issuer over a fresh key directory.
func newIssuer(t *testing.T) *tokens.Issuer {
	t.Helper()
	keys, err := tokens.OpenKeyDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return tokens.NewIssuer(keys, tokens.IssuerConfig{})
}

// mark is one call on fakeView.
type mark struct {
	call   string // activate, present, session or claimed
	ev     string
	pos    int64
	waited time.Duration
	jti    string
}

// fakeView records the calls made on it; Activate fails with fail.
type fakeView struct {
	mu    sync.Mutex
	marks []mark
	fail  error
}

// Activate records an activation until until (in waited, as the time
// after at).
func (v *fakeView) Activate(_ context.Context, ev string, pos int64, until time.Time) error {
	if v.fail != nil {
		return v.fail
	}
	v.add(mark{call: "activate", ev: ev, pos: pos, waited: until.Sub(at)})
	return nil
}

func (v *fakeView) add(m mark) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.marks = append(v.marks, m)
}

func (v *fakeView) PresentAfter(ev string, pos int64, waited time.Duration) {
	v.add(mark{call: "present", ev: ev, pos: pos, waited: waited})
}

func (v *fakeView) Session(ev, jti string, pos int64) {
	v.add(mark{call: "session", ev: ev, pos: pos, jti: jti})
}

func (v *fakeView) ClaimedAfter(ev string, pos int64, waited time.Duration) {
	v.add(mark{call: "claimed", ev: ev, pos: pos, waited: waited})
}

// counter counts metric calls by event.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) issued(ev string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[ev]++
}
