package staffapi

import (
	"context"
	"sync"
	"time"
)

// Consumer-side interfaces of staff sign-in state (package staff keeps
// them in Redis, shared by every node).
type (
	// Throttle counts failed admin authentications per client
	// address; *staff.Throttle.
	Throttle interface {
		// Blocked returns how long addr stays blocked, 0 when it may try.
		Blocked(ctx context.Context, addr string) (time.Duration, error)
		// Failed counts a failure and returns how long addr is now
		// blocked, 0 while under the limit.
		Failed(ctx context.Context, addr string) (time.Duration, error)
	}
	// ConsoleSessions is the set of signed-in console sessions;
	// *staff.Sessions.
	ConsoleSessions interface {
		Start(ctx context.Context, id string, expires, now time.Time) error
		Active(ctx context.Context, id string) (bool, error)
		End(ctx context.Context, id string) error
		EndAll(ctx context.Context) error
	}
)

// Node-local staff state, used when Deps leaves the shared one out (tests
// of the edge alone, a single node): the same rules, held in this process
// only, so a sign-out or a block holds on this node only.
const (
	localMaxFailures = 5
	localFailWindow  = 10 * time.Minute
	localMaxEntries  = 100_000 // bounds memory under a spray of addresses
)

type localStaff struct {
	mu       sync.Mutex
	now      func() time.Time
	fails    map[string]localFail
	sessions map[string]time.Time
}

type localFail struct {
	n     int
	until time.Time
}

func newLocalStaff(now func() time.Time) *localStaff {
	return &localStaff{now: now, fails: map[string]localFail{}, sessions: map[string]time.Time{}}
}

func (l *localStaff) Blocked(_ context.Context, addr string) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, now := l.fails[addr], l.now()
	if f.n < localMaxFailures || !now.Before(f.until) {
		return 0, nil
	}
	return f.until.Sub(now), nil
}

func (l *localStaff) Failed(_ context.Context, addr string) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	f := l.fails[addr]
	if !now.Before(f.until) {
		if len(l.fails) >= localMaxEntries {
			clear(l.fails)
		}
		f = localFail{until: now.Add(localFailWindow)}
	}
	f.n++
	l.fails[addr] = f
	if f.n < localMaxFailures {
		return 0, nil
	}
	return f.until.Sub(now), nil
}

func (l *localStaff) Start(_ context.Context, id string, expires, now time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, exp := range l.sessions {
		if !now.Before(exp) {
			delete(l.sessions, k)
		}
	}
	l.sessions[id] = expires
	return nil
}

func (l *localStaff) Active(_ context.Context, id string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.sessions[id]
	return ok, nil
}

func (l *localStaff) End(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.sessions, id)
	return nil
}

func (l *localStaff) EndAll(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.sessions)
	return nil
}
