package admission

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"
)

//go:embed finish.lua
var finishLua string

//go:embed sessions.lua
var sessionsLua string

// ErrUnknownSession is returned by Finish for a jti no node issued for the
// event (or whose token expired more than SessionGrace ago).
var ErrUnknownSession = errors.New("admission: unknown checkout session")

// SessionGrace is how long after its admission token expires a session's
// jti is still known, so a shop that reports a checkout finished late is
// answered, not refused.
const SessionGrace = 10 * time.Minute

// RecordSessions writes jti -> position for event ev in one script call
// (every key carries the event's hash tag: one slot on a cluster), each
// kept for ttl (the admission TTL) plus SessionGrace; the frontier's step
// then counts a finished session's position as never active again.
func (f *Frontier) RecordSessions(ctx context.Context, ev string, m map[string]int64, ttl time.Duration) error {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	args := make([]any, 0, len(m)+1)
	args = append(args, (ttl + SessionGrace).Milliseconds())
	for jti, pos := range m {
		keys = append(keys, sessionKey(ev, jti))
		args = append(args, pos)
	}
	if err := f.sessions.Run(ctx, f.rdb, keys, args...).Err(); err != nil {
		return fmt.Errorf("sessions %s: %w", ev, err)
	}
	return nil
}

// Finished is the answer to a finished checkout session.
type Finished struct {
	// Position is the session's queue position.
	Position int64
	// Replay is true when the session had already been reported finished.
	Replay bool
}

// Finish ends the checkout session of event ev whose admission token has
// id jti: the position stops counting against max_active (the next
// advance may admit someone else, never above the rate), and a later
// token for it does not make it active again. Idempotent. It returns
// ErrUnknownSession for a jti not issued for ev (or long expired).
func (f *Frontier) Finish(ctx context.Context, ev, jti string) (Finished, error) {
	keys := []string{sessionKey(ev, jti), finishedKey(ev), activeKey(ev)}
	res, err := f.finish.Run(ctx, f.rdb, keys).Int64Slice()
	if err != nil {
		return Finished{}, fmt.Errorf("finish %s: %w", ev, err)
	}
	if len(res) != 3 {
		return Finished{}, fmt.Errorf("finish %s: unexpected reply %v", ev, res)
	}
	if res[0] == 0 {
		return Finished{}, ErrUnknownSession
	}
	return Finished{Position: res[1], Replay: res[2] == 1}, nil
}
